"""A local Weaviate server that fieldguide finds, builds, starts and stops itself.

When `FIELDGUIDE_WEAVIATE_URL` is unset, fieldguide runs Weaviate on loopback as a detached
process with its data in `<data_dir>/weaviate`. The server outlives the command that started
it, so every fieldguide process on the machine (ingest, serve, ask, tests) shares one server
instead of paying the start-up each time. A lock file makes two processes starting at the
same moment end up with one server; a pid file lets `fieldguide weaviate stop` find it.

Where the binary comes from (searched, built or downloaded): `fieldguide.weaviate_binary`.

With `FIELDGUIDE_LOCAL_NODES=3` (or `fieldguide weaviate start --nodes 3`) the same binary runs
as a cluster of three nodes on loopback, joined through Weaviate's own memberlist gossip and
Raft settings, each with a data folder of its own under `<data_dir>/weaviate-cluster/`. Their
ports are chosen once and recorded, so a node that stopped is started again where it was, and
catches up with the others (Weaviate's async replication repairs what it missed).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from fieldguide.errors import StoreUnavailable
from fieldguide.weaviate_binary import (  # the binary's functions stay reachable here too
    BINARY_NAME, GO_PACKAGE, WEAVIATE_VERSION, WHAT_TO_DO, ServerPaths, build_binary, download_binary, find_binary,
)

HOST = "127.0.0.1"
READY_TIMEOUT_SECONDS = 90.0


# --- process management ---------------------------------------------------------------------

def is_ready(port: int, host: str = HOST, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/v1/.well-known/ready", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


PORT_ATTEMPTS = 3  # starts on fresh cluster ports when one given to the server was taken before it bound it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _consecutive_free_ports() -> int:
    """A port p such that p and p + 1 are both free (Weaviate wants gossip/data and raft/rpc pairs)."""
    for _ in range(200):
        with contextlib.ExitStack() as held:
            first = held.enter_context(socket.socket())
            first.bind(("", 0))
            port = int(first.getsockname()[1])
            second = held.enter_context(socket.socket())
            try:
                second.bind(("", port + 1))
            except OSError:
                continue
            return port
    raise StoreUnavailable("Could not find free local ports for Weaviate.")


def _read_state(paths: ServerPaths) -> dict:
    try:
        return json.loads(paths.state.read_text())
    except (OSError, ValueError):
        return {}


def _state_for(paths: ServerPaths, http_port: int, grpc_port: int) -> dict:
    """The recorded state when it describes the server on `http_port`, else just the ports."""
    state = _read_state(paths)
    if state.get("http_port") == http_port:
        return state
    return {"http_port": http_port, "grpc_port": grpc_port}


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child, not yet reaped) counts as gone
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


@contextlib.contextmanager
def _locked(paths: ServerPaths):
    paths.root.mkdir(parents=True, exist_ok=True)
    with open(paths.lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _server_env(paths: ServerPaths, http_port: int, grpc_port: int, state: dict) -> dict:
    env = dict(os.environ)
    env.update({
        "PERSISTENCE_DATA_PATH": str(paths.persistence),
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
        "DISABLE_TELEMETRY": "true",
        "QUERY_DEFAULTS_LIMIT": "25",
        "GRPC_PORT": str(grpc_port),
        # a one-node cluster on loopback; every internal port explicit so none collides
        "CLUSTER_HOSTNAME": "node1",
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_GOSSIP_BIND_PORT": str(state["gossip_port"]),
        "CLUSTER_DATA_BIND_PORT": str(state["gossip_port"] + 1),
        "RAFT_PORT": str(state["raft_port"]),
        "RAFT_INTERNAL_RPC_PORT": str(state["raft_port"] + 1),
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "RAFT_JOIN": f"node1:{state['raft_port']}",
        "PROFILING_PORT": str(state["profiling_port"]),
    })
    return env


def start(settings, http_port: int | None = None, grpc_port: int | None = None,
          timeout: float = READY_TIMEOUT_SECONDS, log=None, nodes: int | None = None) -> dict:
    """Make sure a local server (or, with `nodes` > 1, a local cluster) answers; start it if needed.

    Returns the server state (pid, ports, binary, and "nodes": every node's name and ports).
    Safe to call from many processes at once.
    """
    count = nodes or int(getattr(settings, "local_nodes", 1) or 1)
    if count > 1:
        return start_cluster(settings, count, timeout=timeout, log=log)
    state = _start_one(settings, http_port, grpc_port, timeout, log)
    return {**state, "nodes": [{"name": "node1", "http_port": state["http_port"], "grpc_port": state["grpc_port"]}]}


def _start_one(settings, http_port: int | None, grpc_port: int | None, timeout: float, log) -> dict:
    http_port = http_port or settings.local_http_port
    grpc_port = grpc_port or settings.local_grpc_port
    paths = ServerPaths(Path(settings.data_dir))
    if is_ready(http_port):
        return _state_for(paths, http_port, grpc_port)
    with _locked(paths):
        state = _read_state(paths)
        # another process may have started it while we waited for the lock
        if state.get("http_port") == http_port and _pid_alive(state.get("pid")):
            if _wait_ready(http_port, state["pid"], timeout):
                return state
        if is_ready(http_port):
            return _state_for(paths, http_port, grpc_port)
        if _port_in_use(http_port):
            raise StoreUnavailable(
                f"Port {http_port} is taken by something that is not a ready Weaviate. Free it, or choose "
                f"another with FIELDGUIDE_LOCAL_HTTP_PORT. {WHAT_TO_DO}")
        binary = find_binary(settings)
        if binary is None:
            if shutil.which("go"):
                raise StoreUnavailable(
                    "No weaviate-server binary found. Build it once with `fieldguide weaviate build` "
                    "(or set FIELDGUIDE_WEAVIATE_URL to an external Weaviate).")
            binary = download_binary(settings, log=log or (lambda _msg: None))
        paths.persistence.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            state, process, log_start = _spawn(binary, paths, http_port, grpc_port)
            if _wait_ready(http_port, process.pid, timeout):
                break
            alive = process.poll() is None
            if alive:
                _terminate(process.pid)
            if alive or attempt == PORT_ATTEMPTS or not _lost_a_port(paths.log, log_start):
                raise StoreUnavailable(
                    f"The local Weaviate server ({binary}) did not become ready on port {http_port} "
                    f"({'timed out' if alive else 'it exited'}); see {paths.log}:\n{_tail(paths.log)}")
        return state


def _spawn(binary: Path, paths: ServerPaths, http_port: int, grpc_port: int) -> tuple[dict, subprocess.Popen, int]:
    """Starts the server detached on fresh cluster ports; returns its state (also written to the
    state file), the process, and where this start's lines begin in the server's log."""
    state = {
        "http_port": http_port,
        "grpc_port": grpc_port,
        "gossip_port": _consecutive_free_ports(),
        "raft_port": _consecutive_free_ports(),
        "profiling_port": free_port(),
        "binary": str(binary),
    }
    log_start = paths.log.stat().st_size if paths.log.exists() else 0
    with open(paths.log, "ab") as log_file:
        process = subprocess.Popen(
            [str(binary), "--host", HOST, "--port", str(http_port), "--scheme", "http",
             "--read-timeout=600s", "--write-timeout=600s"],
            env=_server_env(paths, http_port, grpc_port, state),
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
            cwd=str(paths.root), start_new_session=True,  # detached: outlives this process
        )
    state["pid"] = process.pid
    paths.state.write_text(json.dumps(state))
    return state, process, log_start


def _lost_a_port(log: Path, start: int) -> bool:
    """Whether the server's lines since `start` say a port it was given was taken: the cluster
    ports are free when chosen, and another process may bind one before the server does (it
    binds them on the host's own address, where a check on the wildcard address does not look)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(start)
            return b"address already in use" in fh.read()
    except OSError:
        return False


def _wait_ready(port: int, pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_ready(port):
            return True
        if not _pid_alive(pid):
            return False
        time.sleep(0.25)
    return False


def _terminate(pid: int, timeout: float = 20.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(pid):
        _reap(pid)
        time.sleep(0.1)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _looks_like_weaviate(pid: int) -> bool:
    try:
        return "weaviate" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True  # no /proc (macOS): trust the pid file


def stop(settings) -> bool:
    """Stop the server recorded in the pid file, and the local cluster's nodes. True when one was stopped."""
    paths = ServerPaths(Path(settings.data_dir))
    with _locked(paths):
        state = _read_state(paths)
        pid = state.get("pid")
        stopped = False
        if _pid_alive(pid) and _looks_like_weaviate(pid):
            _terminate(pid)
            stopped = True
        with contextlib.suppress(FileNotFoundError):
            paths.state.unlink()
        for node in _read_cluster(paths).get("nodes", []):  # the ports stay recorded for the next start
            if _pid_alive(node.get("pid")) and _looks_like_weaviate(node["pid"]):
                _terminate(node["pid"])
                stopped = True
        return stopped


# --- a local cluster ---------------------------------------------------------------------------

def _read_cluster(paths: ServerPaths) -> dict:
    try:
        return json.loads(paths.cluster_state.read_text())
    except (OSError, ValueError):
        return {}


def _new_cluster(settings, count: int) -> dict:
    nodes = []
    for n in range(1, count + 1):
        nodes.append({
            "name": f"node{n}",
            # the first node where a single server would be, so clients configured for it still work
            "http_port": settings.local_http_port if n == 1 else free_port(),
            "grpc_port": settings.local_grpc_port if n == 1 else free_port(),
            "gossip_port": _consecutive_free_ports(),
            "raft_port": _consecutive_free_ports(),
            "profiling_port": free_port(),
        })
    return {"nodes": nodes}


def _node_env(paths: ServerPaths, node: dict, nodes: list[dict]) -> dict:
    env = dict(os.environ)
    env.update({
        "PERSISTENCE_DATA_PATH": str(paths.cluster_root / node["name"]),
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
        "DISABLE_TELEMETRY": "true",
        "QUERY_DEFAULTS_LIMIT": "25",
        "GRPC_PORT": str(node["grpc_port"]),
        "CLUSTER_HOSTNAME": node["name"],
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_GOSSIP_BIND_PORT": str(node["gossip_port"]),
        "CLUSTER_DATA_BIND_PORT": str(node["gossip_port"] + 1),
        "CLUSTER_JOIN": ",".join(f"{HOST}:{other['gossip_port']}" for other in nodes if other is not node),
        "RAFT_PORT": str(node["raft_port"]),
        "RAFT_INTERNAL_RPC_PORT": str(node["raft_port"] + 1),
        "RAFT_BOOTSTRAP_EXPECT": str(len(nodes)),
        "RAFT_JOIN": ",".join(f"{other['name']}:{other['raft_port']}" for other in nodes),
        "PROFILING_PORT": str(node["profiling_port"]),
    })
    return env


def start_cluster(settings, count: int, timeout: float = READY_TIMEOUT_SECONDS, log=None) -> dict:
    """Make sure `count` local nodes run as one cluster; start those that do not (again, with the
    ports and data they had). Returns {"nodes": [...], "http_port", "grpc_port"} (the first node's)."""
    paths = ServerPaths(Path(settings.data_dir))
    with _locked(paths):
        state = _read_cluster(paths)
        if state and len(state.get("nodes", [])) != count:
            if any(_pid_alive(node.get("pid")) for node in state["nodes"]):
                raise StoreUnavailable(
                    f"A local Weaviate cluster of {len(state['nodes'])} nodes is running; stop it first "
                    "(`fieldguide weaviate stop`) to start one of another size.")
            state = {}
        if not state:
            state = _new_cluster(settings, count)
        if _pid_alive(_read_state(paths).get("pid")):
            raise StoreUnavailable("The single local Weaviate server is running; stop it first "
                                   "(`fieldguide weaviate stop`) to start a local cluster.")
        binary = find_binary(settings)
        if binary is None:
            raise StoreUnavailable("No weaviate-server binary found. Build it once with `fieldguide weaviate build`.")
        nodes = state["nodes"]
        paths.cluster_root.mkdir(parents=True, exist_ok=True)
        for node in nodes:
            if _pid_alive(node.get("pid")):
                continue
            for port in (node["http_port"], node["grpc_port"]):
                if _port_in_use(port):
                    raise StoreUnavailable(f"Port {port} of Weaviate cluster node {node['name']} is taken by "
                                           "something else. Free it, or stop that program.")
            (paths.cluster_root / node["name"]).mkdir(parents=True, exist_ok=True)
            with open(paths.cluster_root / f"{node['name']}.log", "ab") as log_file:
                process = subprocess.Popen(
                    [str(binary), "--host", HOST, "--port", str(node["http_port"]), "--scheme", "http",
                     "--read-timeout=600s", "--write-timeout=600s"],
                    env=_node_env(paths, node, nodes), stdin=subprocess.DEVNULL, stdout=log_file,
                    stderr=subprocess.STDOUT, cwd=str(paths.cluster_root), start_new_session=True)
            node["pid"] = process.pid
            node["binary"] = str(binary)
            if log:
                log(f"started Weaviate cluster node {node['name']} on port {node['http_port']} (pid {process.pid})")
        paths.cluster_state.write_text(json.dumps(state))
        for node in nodes:
            if not _wait_ready(node["http_port"], node["pid"], timeout):
                raise StoreUnavailable(
                    f"Weaviate cluster node {node['name']} did not become ready on port {node['http_port']}; see "
                    f"{paths.cluster_root / (node['name'] + '.log')}:\n"
                    f"{_tail(paths.cluster_root / (node['name'] + '.log'))}")
        return {"nodes": nodes, "http_port": nodes[0]["http_port"], "grpc_port": nodes[0]["grpc_port"],
                "cluster": True}


def cluster_nodes(settings) -> list[dict]:
    """The local cluster's recorded nodes (name, ports, pid), running or not."""
    return _read_cluster(ServerPaths(Path(settings.data_dir))).get("nodes", [])


def status(settings) -> dict:
    paths = ServerPaths(Path(settings.data_dir))
    state = _read_state(paths)
    port = state.get("http_port") or settings.local_http_port
    binary = None
    with contextlib.suppress(StoreUnavailable):
        binary = find_binary(settings)
    cluster = [{"name": n["name"], "http_port": n["http_port"], "grpc_port": n["grpc_port"],
                "pid": n.get("pid") if _pid_alive(n.get("pid")) else None, "ready": is_ready(n["http_port"])}
               for n in _read_cluster(paths).get("nodes", [])]
    return {
        "external_url": settings.weaviate_url,
        "cluster": cluster,
        "http_port": port,
        "grpc_port": state.get("grpc_port") or settings.local_grpc_port,
        "pid": state.get("pid") if _pid_alive(state.get("pid")) else None,
        "ready": is_ready(port),
        "binary": str(binary) if binary else None,
        "data": str(paths.persistence),
        "log": str(paths.log),
    }
