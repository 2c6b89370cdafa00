package peer;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;

/**
 * volley peer fixture: every virtual user sends "same" (GET /fast) inside group "A", "same"
 * (GET /fast) again inside group "B", then "outside" (GET /slow) in no group. Open model,
 * peer.rate users/s for peer.seconds s (defaults 10/s for 15 s = 150 users, 450 requests:
 * /fast 300, /slow 150). Compiles against the Java DSL of both Gatling 3.10.x and 3.13.x.
 */
public class PeerSimulation extends Simulation {

  private static final String BASE_URL = System.getProperty("peer.baseUrl", "http://127.0.0.1:18091");
  private static final double RATE = Double.parseDouble(System.getProperty("peer.rate", "10"));
  private static final long SECONDS = Long.parseLong(System.getProperty("peer.seconds", "15"));

  // disableWarmUp: otherwise Gatling first sends a warm-up request to https://gatling.io
  private final HttpProtocolBuilder httpProtocol = http.baseUrl(BASE_URL).disableWarmUp();

  private final ScenarioBuilder scn =
      scenario("peer")
          .group("A").on(exec(http("same").get("/fast")))
          .group("B").on(exec(http("same").get("/fast")))
          .exec(http("outside").get("/slow"));

  {
    setUp(scn.injectOpen(constantUsersPerSec(RATE).during(SECONDS)))
        .protocols(httpProtocol)
        // all four are expected to pass (5 % errors, sub-100 ms latencies); they cover the
        // Global, ForAll and Details paths, Percent/Time targets, Gt/Lt conditions and a
        // Percentile stat (a Double inside the pickled assertion).
        .assertions(
            global().successfulRequests().percent().gt(50.0),
            global().responseTime().max().lt(5000),
            forAll().failedRequests().percent().lt(20.0),
            details("A", "same").responseTime().percentile(95.0).lt(1000));
  }
}
