"""An agent's memcached is its own, never another job's that took its port first."""
import json
import os
import signal
import subprocess
import sys
import time

from repro.testing import project_env
from tools.common import free_port, memcached_pid, started_here


def test_an_agent_whose_port_another_memcached_took_starts_its_own(tmp_path):
    """The port the agent is given (--mc-port, as free_port() would hand it out a moment too early) is
    already served by another memcached (another job on the node). The old start connected, saw an
    answer and registered the other's server as its own: MemFS's stripes then lived and died with the
    other job (the rehearsal's fusegap EIO at load 36). Now it starts its own on another port."""
    port = free_port()
    other = subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16"]
                             + (["-u", "root"] if os.geteuid() == 0 else []), stderr=subprocess.DEVNULL)
    rdv, work = tmp_path / "rdv", tmp_path / "work"
    rdv.mkdir()
    (rdv / "authkey").write_bytes(os.urandom(32))
    agent = None
    try:
        for _ in range(250):
            if memcached_pid("127.0.0.1", port, 0.2) == other.pid:
                break
            time.sleep(0.02)
        agent = subprocess.Popen([sys.executable, "-m", "systems.mtc.agent", "--index", "0", "--rendezvous",
                                  str(rdv), "--workdir", str(work), "--ip", "127.0.0.1", "--mc-port", str(port),
                                  "--mem-mb", "16"], env=project_env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        for _ in range(1500):
            if (rdv / "node-0.json").exists() or agent.poll() is not None:
                break
            time.sleep(0.02)
        assert (rdv / "node-0.json").exists(), agent.communicate(timeout=10)[0][-2000:]
        info = json.loads((rdv / "node-0.json").read_text())
        host, p = info["server"].rsplit(":", 1)
        assert int(p) != port, f"the agent registered the other job's memcached ({info['server']})"
        pid = memcached_pid(host, int(p))
        assert pid == info["memcached_pid"] or started_here(pid, info["memcached_pid"]) is True
        assert memcached_pid("127.0.0.1", port) == other.pid  # the other's server is left alone
    finally:
        if agent is not None and agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                out = agent.communicate(timeout=30)[0]
            except subprocess.TimeoutExpired:
                agent.kill()
                out = agent.communicate()[0]
            assert "not ours" in out, out[-2000:]
        other.kill()
        other.wait()
