"""Helper of the memfs plan tests: the cluster plan's jobs and their commands."""

import re


def cluster_jobs(snake, target: str, *overlays: str) -> dict:
    """{(rule, output): shell command} of every job of ``snake -n -p -F <target>`` on the cluster path
    (profiles/slurm, config/config.yaml and the workspace's ``overlays``)."""
    out = snake("-n", "-p", "-F", target, "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                *overlays, timeout=600).stdout
    jobs = {}
    for block in re.split(r"\n(?=(?:local)?rule \S+:\n)", out):
        rule = re.match(r"(?:local)?rule (\S+):", block)
        output = re.search(r"^\s+output: (.*)$", block, re.M)
        cmd = re.search(r"^Shell command: (.*)$", block, re.M)
        if rule and output and cmd:
            jobs[(rule.group(1), output.group(1))] = cmd.group(1)
    return jobs
