"""docker-compose.yml cannot run here; check what can be checked by reading it."""
from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


def _env(service: dict) -> dict:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: str(value) for key, value in env.items()}


def test_weaviate_is_pinned_without_vectorizer_and_persistent():
    compose = _compose()
    weaviate = compose["services"]["weaviate"]
    assert weaviate["image"] == "cr.weaviate.io/semitechnologies/weaviate:1.39.0"
    env = _env(weaviate)
    assert env["DEFAULT_VECTORIZER_MODULE"] == "none"
    assert env.get("ENABLE_MODULES", "") == ""
    assert env["DISABLE_TELEMETRY"] == "true"
    data_path = env["PERSISTENCE_DATA_PATH"]
    volumes = [v.split(":") for v in weaviate["volumes"]]
    assert any(target == data_path and source in compose["volumes"] for source, target, *_ in volumes)
    ports = {p.split(":")[-1] for p in weaviate["ports"]}
    assert {"8080", "50051"} <= ports


def test_weaviate_health_check_uses_ready_endpoint():
    check = _compose()["services"]["weaviate"]["healthcheck"]
    assert "/v1/.well-known/ready" in " ".join(check["test"])
    assert check["retries"] >= 1


def test_app_points_at_the_weaviate_service():
    compose = _compose()
    app = compose["services"]["app"]
    env = _env(app)
    assert env["FIELDGUIDE_WEAVIATE_URL"] == "http://weaviate:8080"
    assert env["FIELDGUIDE_WEAVIATE_GRPC_PORT"] == "50051"
    assert app["depends_on"]["weaviate"]["condition"] == "service_healthy"
    assert app["build"] == "."
    command = " ".join(app["command"]) if isinstance(app["command"], list) else app["command"]
    assert "fieldguide ingest" in command
    assert command.index("fieldguide ingest") < command.index("fieldguide serve --host 0.0.0.0 --port 8000")
    assert (ROOT / "Dockerfile").is_file()


def _stages() -> list[list[str]]:
    """The Dockerfile's build stages, each a list of its instruction lines (continuations joined)."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    stages: list[list[str]] = []
    for line in (line.strip() for line in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            stages.append([])
        stages[-1].append(" ".join(line.split()))
    return stages


def test_dockerfile_installs_the_project_on_python_311():
    app = _stages()[-1]
    assert app[0] == "FROM python:3.11-slim"
    assert any(line.startswith("RUN ") and "pip install" in line and line.endswith(" .") for line in app)
    text = "\n".join(app)
    assert "FIELDGUIDE_WEAVIATE_URL=http://weaviate:8080" in text
    assert "fieldguide serve --host 0.0.0.0 --port 8000" in text


# --- profile "cluster": three Weaviate nodes, Redis, Postgres, one ingest, two replicas, a proxy --------

CLUSTER = ["weaviate-0", "weaviate-1", "weaviate-2", "redis", "postgres", "ingest", "app-1", "app-2", "proxy"]
NODES = CLUSTER[:3]
REPLICAS = ["app-1", "app-2"]


def test_the_cluster_profile_holds_every_piece_and_only_it():
    services = _compose()["services"]
    assert [name for name in services if "cluster" in services[name].get("profiles", [])] == CLUSTER
    assert "profiles" not in services["weaviate"] and "profiles" not in services["app"]  # the default stays as it was


def test_the_weaviate_nodes_form_one_cluster_each_with_its_own_data():
    compose = _compose()
    services = compose["services"]
    gossip = {}
    for name in NODES:
        node = services[name]
        env = _env(node)
        assert node["image"] == services["weaviate"]["image"]
        assert env["CLUSTER_HOSTNAME"] == name  # Raft finds the nodes by these names
        assert env["RAFT_JOIN"].split(",") == NODES and env["RAFT_BOOTSTRAP_EXPECT"] == str(len(NODES))
        assert env["DEFAULT_VECTORIZER_MODULE"] == "none"
        gossip[name] = env["CLUSTER_GOSSIP_BIND_PORT"]
        (volume,) = node["volumes"]
        source, target = volume.split(":")[:2]
        assert target == env["PERSISTENCE_DATA_PATH"] and source in compose["volumes"]
    joins = [_env(services[name]).get("CLUSTER_JOIN") for name in NODES]
    assert joins[0] is None  # the seed
    for join in joins[1:]:
        host, port = join.split(":")
        assert host in NODES and gossip[host] == port
    assert len({services[name]["volumes"][0].split(":")[0] for name in NODES}) == len(NODES)


def test_the_replicas_share_redis_postgres_and_every_node_and_never_ingest():
    from fieldguide.settings import Settings

    services = _compose()["services"]
    postgres = _env(services["postgres"])
    fields = set(Settings.model_fields)
    for name in ["ingest", *REPLICAS]:
        env = _env(services[name])
        for key in env:  # every fieldguide setting named here exists
            if key.startswith("FIELDGUIDE_"):
                assert key[len("FIELDGUIDE_"):].lower() in fields, key
        urls = env["FIELDGUIDE_WEAVIATE_URL"].split(",")
        assert [u.split("//")[1].split(":")[0] for u in urls] == NODES
        assert all(u.endswith(":8080") for u in urls) and env["FIELDGUIDE_WEAVIATE_GRPC_PORT"] == "50051"
        assert 1 < int(env["FIELDGUIDE_REPLICATION_FACTOR"]) <= len(NODES)
        assert env["FIELDGUIDE_STATE_URL"] == "redis://redis:6379/0"
        checkpoints = env["FIELDGUIDE_CHECKPOINT_URL"]
        assert checkpoints == (f"postgresql://{postgres['POSTGRES_USER']}:{postgres['POSTGRES_PASSWORD']}"
                               f"@postgres:5432/{postgres['POSTGRES_DB']}")
    for name in REPLICAS:
        app = services[name]
        command = app["command"]
        assert command[:2] == ["fieldguide", "serve"] and "--docs" not in command  # serve never ingests
        assert "FIELDGUIDE_DOCS_DIR" not in _env(app)
        assert app["depends_on"]["ingest"]["condition"] == "service_completed_successfully"
        assert {"redis", "postgres"} <= set(app["depends_on"])
    assert services["ingest"]["command"][:2] == ["fieldguide", "ingest"]
    assert set(services["ingest"]["depends_on"]) == set(NODES)


def test_the_proxy_spreads_over_both_replicas_without_buffering_streams():
    compose = _compose()
    proxy = compose["services"]["proxy"]
    (config,) = proxy["configs"]
    text = compose["configs"][config["source"]]["content"]
    upstream = [line.split()[1].rstrip(";") for line in text.splitlines()
                if line.strip().startswith("server ") and line.strip().endswith(";")]
    port = compose["services"]["app-1"]["command"][-1]
    assert upstream == [f"{name}:{port}" for name in REPLICAS]
    assert "proxy_buffering off;" in text and "proxy_read_timeout" in text
    assert set(proxy["depends_on"]) == set(REPLICAS)
    assert [p.split(":")[-1] for p in proxy["ports"]] == ["80"] and "listen 80;" in text


def test_dockerfile_builds_the_chat_page_libraries_in_a_node_stage():
    import json

    from fieldguide.service.assets import VENDOR_FILES

    *builders, app = _stages()
    (web,) = [stage for stage in builders if stage[0].startswith("FROM node:")]
    name = web[0].split(" AS ")[-1]
    workdir = next(line.split()[1] for line in web if line.startswith("WORKDIR "))
    assert any(line.startswith("COPY ") and "fieldguide/web/package-lock.json" in line for line in web)
    assert any(line.startswith("RUN npm ci") for line in web)
    # the app stage takes the stage's node_modules to where the service looks for them, before the
    # install (so a regular install ships them as package data)
    copy = f"COPY --from={name} {workdir}/node_modules /app/fieldguide/web/node_modules"
    assert copy in app
    install = next(i for i, line in enumerate(app) if line.startswith("RUN ") and "pip install" in line)
    assert app.index(copy) < install
    locked = json.loads((ROOT / "fieldguide" / "web" / "package-lock.json").read_text(encoding="utf-8"))
    packages = {path.split("node_modules/")[-1] for path in locked.get("packages", {}) if path}
    assert {package for package, _ in VENDOR_FILES.values()} <= packages
    assert "node_modules" in (ROOT / ".dockerignore").read_text(encoding="utf-8").split()  # never the host's
