# Locust user for bench/peer-fixtures.sh: each of 10 users sends 1.5 requests/s, alternating
# /fast and /slow of server.py (~15 requests/s in all).
from locust import FastHttpUser, constant_throughput, task


class Alternating(FastHttpUser):
    wait_time = constant_throughput(1.5)
    n = 0

    @task
    def request(self):
        self.n += 1
        path = "/fast" if self.n % 2 else "/slow"
        with self.client.get(path, name=path, catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"HTTP {r.status_code}")
