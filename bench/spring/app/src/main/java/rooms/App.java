package rooms;

import java.sql.ResultSet;
import java.sql.Statement;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * GET /rooms holds one pooled connection for a fixed time (app.hold-ms, 20 ms by default), so
 * the ceiling is known by construction: a pool of P connections serves P / hold requests per
 * second, and a Tomcat of T < P threads serves T / hold.
 */
@SpringBootApplication
@RestController
public class App {
    private final JdbcTemplate jdbc;
    private final long holdMs;

    public App(JdbcTemplate jdbc, @Value("${app.hold-ms:20}") long holdMs) {
        this.jdbc = jdbc;
        this.holdMs = holdMs;
    }

    public static void main(String[] args) {
        SpringApplication.run(App.class, args);
    }

    /** One query on a pooled connection held for holdMs (or ?hold=ms, at most 10 s). */
    @GetMapping("/rooms")
    public String rooms(@RequestParam(name = "hold", required = false) Long hold) {
        long ms = hold == null ? holdMs : Math.max(0, Math.min(hold, 10_000));
        Integer rooms = jdbc.execute((ConnectionCallback<Integer>) c -> {
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT 12")) {
                r.next();
                int n = r.getInt(1);
                if (ms > 0) {
                    try {
                        Thread.sleep(ms);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return n;
            }
        });
        return "{\"rooms\":" + rooms + ",\"held_ms\":" + ms + "}";
    }
}
