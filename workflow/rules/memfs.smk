# The memfs study: see systems/memfs/ and results/memfs/. Disabled until its benchmark lands.

STUDY_REPORT["memfs"] = {
    "title": "memfs",
    "paper": "",
    "enabled": enabled("memfs"),
    "claims": None,
    "figures": [],
    "tables": [],
    "stand_ins": [],
    "expected_times": {},
}
