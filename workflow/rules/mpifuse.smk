# The mpifuse study: see systems/mpifuse/ and results/mpifuse/. Disabled until its benchmark lands.

STUDY_REPORT["mpifuse"] = {
    "title": "mpifuse",
    "paper": "",
    "enabled": enabled("mpifuse"),
    "claims": None,
    "figures": [],
    "tables": [],
    "stand_ins": [],
    "expected_times": {},
}
