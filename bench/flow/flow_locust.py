# The flow of bench/flow.sh for Locust (FastHttpUser): log in, read the items with the token, post one.
from locust import FastHttpUser, constant, task


class Flow(FastHttpUser):
    wait_time = constant(0)

    @task
    def flow(self):
        token = self.client.post("/login", json={"user": "u", "password": "secret"}).json()["token"]
        with self.client.get(f"/items/{token}", name="/items/[token]", catch_response=True) as r:
            if r.json()["items"][0].get("id") is None:
                r.failure("no items")
        self.client.post(f"/items/{token}", name="/items/[token] POST", json={"name": "item"})
