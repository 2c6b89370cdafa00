package demo;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

@SpringBootApplication
@RestController
public class App {
    private final JdbcTemplate jdbc;
    public App(JdbcTemplate jdbc) { this.jdbc = jdbc; }
    public static void main(String[] args) { SpringApplication.run(App.class, args); }
    @GetMapping("/owners/{ownerId}")
    public Integer owner(@PathVariable int ownerId) { return jdbc.queryForObject("SELECT ?", Integer.class, ownerId); }
}
