"""The load generator's own ceiling: GET / against trivial_server.py (answers "ok" at once).

Same user class, wait time and client as the protocol locustfiles, so its throughput at a given
number of users and processes bounds what Locust itself can send here.
"""

import final_csv  # noqa: F401  (the CSVs get the final numbers at quit)
from locust import FastHttpUser, constant, task


class TrivialUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def hit(self):
        with self.client.get("/", name="trivial", catch_response=True) as r:
            if r.status_code != 200 or r.content != b"ok":
                r.failure(f"HTTP {r.status_code}: {(r.content or b'')[:50]!r}" if r.status_code else
                          f"no answer: {r.error!r}")
