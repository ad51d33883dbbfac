#!/usr/bin/env python3
"""Checks what can be checked of deploy/ without Docker or a cluster (`make deploy-check`).

- every YAML file parses (compose, Kubernetes manifests, the example configurations);
- the example configurations (compose, config/authgate.yaml, config/production.example.yaml)
  are valid for `authgate check-config`; the debug binary must be built (`make build`), a
  missing binary is a problem, never a silent skip;
- Kubernetes: the Deployment has readiness and liveness probes, resource requests and limits,
  runs as non-root, and its termination grace period outlasts the gateway's shutdown timeout;
  the HPA and PDB select it;
- the Dockerfile's build stage runs `make release` (the command a release build uses), and the
  benchmarks build with the same flags (scripts/lib.sh release_build); the
  runtime stage runs as a non-root user with a health check on /readyz;
- docker compose: Redis with append-only persistence, two gateways, an upstream;
- the systemd unit reloads with SIGHUP, stops with SIGTERM, and carries the hardening options;
- with server.tls in the Kubernetes configuration, the probes use HTTPS.
Exits 1 listing every problem.
"""
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []


def problem(where, text):
    problems.append(f"{os.path.relpath(where, ROOT)}: {text}")


def load_all(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return [document for document in yaml.safe_load_all(handle) if document is not None]
    except yaml.YAMLError as error:
        problem(path, f"does not parse: {error}")
        return []


yaml_files = []
for directory in ["deploy", "config"]:
    for base, _, files in os.walk(os.path.join(ROOT, directory)):
        yaml_files += [os.path.join(base, name) for name in files if name.endswith((".yaml", ".yml"))]
documents = {path: load_all(path) for path in sorted(yaml_files)}

# Kubernetes manifests.
kubernetes = os.path.join(ROOT, "deploy", "kubernetes")
manifests = [(path, doc) for path, docs in documents.items() if path.startswith(kubernetes) for doc in docs]
kinds = {doc.get("kind"): (path, doc) for path, doc in manifests}
for kind in ["Deployment", "Service", "ConfigMap", "Secret", "HorizontalPodAutoscaler", "PodDisruptionBudget"]:
    if kind not in kinds:
        problem(kubernetes, f"no {kind} manifest")
if "Deployment" in kinds:
    path, deployment = kinds["Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    labels = deployment["spec"]["selector"]["matchLabels"]
    for container in spec["containers"]:
        for probe in ["readinessProbe", "livenessProbe"]:
            if probe not in container:
                problem(path, f"container {container['name']} has no {probe}")
        if container.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
            problem(path, "the readiness probe must ask /readyz")
        resources = container.get("resources", {})
        for part in ["requests", "limits"]:
            if not {"cpu", "memory"} <= set(resources.get(part, {})):
                problem(path, f"container {container['name']} lacks cpu and memory {part}")
    if not spec.get("securityContext", {}).get("runAsNonRoot"):
        problem(path, "the pod must run as non-root")
    if "ConfigMap" in kinds:
        config = yaml.safe_load(kinds["ConfigMap"][1]["data"]["authgate.yaml"])
        if config.get("server", {}).get("tls"):
            for container in spec["containers"]:
                for probe in ["readinessProbe", "livenessProbe"]:
                    if container.get(probe, {}).get("httpGet", {}).get("scheme") != "HTTPS":
                        problem(path, f"server.tls is set: the {probe} of {container['name']} must use scheme HTTPS")
        timeout = config.get("server", {}).get("shutdown_timeout", "30s")
        seconds = int(re.fullmatch(r"(\d+)s", timeout).group(1)) if re.fullmatch(r"(\d+)s", timeout) else 30
        if spec.get("terminationGracePeriodSeconds", 30) <= seconds:
            problem(path, f"terminationGracePeriodSeconds must outlast server.shutdown_timeout ({timeout})")
    for kind in ["HorizontalPodAutoscaler", "PodDisruptionBudget"]:
        if kind in kinds:
            other_path, other = kinds[kind]
            if kind == "HorizontalPodAutoscaler" and other["spec"]["scaleTargetRef"]["name"] != deployment["metadata"]["name"]:
                problem(other_path, "the HPA does not target the Deployment")
            if kind == "PodDisruptionBudget" and other["spec"]["selector"]["matchLabels"] != labels:
                problem(other_path, "the PDB does not select the Deployment's pods")

# Dockerfile.
dockerfile = os.path.join(ROOT, "deploy", "Dockerfile")
with open(dockerfile, encoding="utf-8") as handle:
    text = handle.read()
stages = re.split(r"(?m)^FROM ", text)[1:]
if len(stages) != 2:
    problem(dockerfile, "expected two stages: build and runtime")
else:
    build, runtime = stages
    runs = re.findall(r"(?m)^RUN (make [^\n]*)", build)
    if not any(run.split()[:2] == ["make", "release"] for run in runs):
        problem(dockerfile, "the build stage must build with `make release`, as the Makefile does")
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        makefile_text = handle.read()
    if not re.search(r"(?m)^release:", makefile_text):
        problem(dockerfile, "the Makefile has no release target")
    # The benchmarks measure the binary that ships: scripts/lib.sh's release_build passes the
    # Makefile's default RELEASE_FLAGS.
    makefile_flags = re.search(r"(?m)^RELEASE_FLAGS \?=(.*)$", makefile_text)
    with open(os.path.join(ROOT, "scripts", "lib.sh"), encoding="utf-8") as handle:
        bench_flags = re.search(r"(?m)^release_build\(\) \{ \S+ build -c release(.*) --product ", handle.read())
    if makefile_flags is None or bench_flags is None:
        problem(dockerfile, "no RELEASE_FLAGS default in the Makefile or no release_build in scripts/lib.sh")
    elif makefile_flags.group(1).split() != bench_flags.group(1).split():
        problem(dockerfile, f"scripts/lib.sh builds release with {bench_flags.group(1).split()}, `make release` with {makefile_flags.group(1).split()}")
    if not re.search(r"(?m)^USER (?!0|root)", runtime):
        problem(dockerfile, "the runtime stage must run as a non-root user")
    if "/readyz" not in runtime or "HEALTHCHECK" not in runtime:
        problem(dockerfile, "the runtime stage needs a HEALTHCHECK on /readyz")
    if "libhiredis" not in runtime:
        problem(dockerfile, "the runtime stage must install libhiredis")
    if "libjemalloc" not in runtime or "libjemalloc-dev" not in build:
        problem(dockerfile, "the build stage must install libjemalloc-dev and the runtime stage libjemalloc2 (authgate links jemalloc)")

# docker compose.
compose_path = os.path.join(ROOT, "deploy", "compose", "docker-compose.yml")
for compose in documents.get(compose_path, []):
    services = compose.get("services", {})
    redis = services.get("redis", {})
    if "--appendonly" not in " ".join(map(str, redis.get("command", []))):
        problem(compose_path, "Redis must run with --appendonly yes")
    gateways = [name for name, service in services.items() if "dockerfile" in str(service.get("build", "")) or name.startswith("gateway")]
    if len(gateways) < 2:
        problem(compose_path, "expected two gateways")
    if "upstream" not in services:
        problem(compose_path, "expected an example upstream")

# systemd unit.
unit = os.path.join(ROOT, "deploy", "systemd", "authgate.service")
with open(unit, encoding="utf-8") as handle:
    unit_text = handle.read()
for line in ["ExecReload=/bin/kill -HUP $MAINPID", "KillSignal=SIGTERM", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
             "CapabilityBoundingSet=", "RestrictAddressFamilies=", "SystemCallFilter=@system-service"]:
    if line not in unit_text:
        problem(unit, f"missing {line}")

# The example configurations, checked by the gateway itself when it is built.
binary = os.path.join(ROOT, ".build", "debug", "authgate")
examples = ["deploy/compose/authgate.yaml", "deploy/compose/authgate-tls.yaml", "config/authgate.yaml", "config/production.example.yaml"]
if "ConfigMap" in kinds:
    # The Kubernetes configuration, as the pods read it.
    import atexit
    import shutil
    import tempfile
    configmap_directory = tempfile.mkdtemp(prefix="authgate-deploy-check-")
    atexit.register(shutil.rmtree, configmap_directory, True)
    configmap_copy = os.path.join(configmap_directory, "authgate.yaml")
    with open(configmap_copy, "w", encoding="utf-8") as handle:
        handle.write(kinds["ConfigMap"][1]["data"]["authgate.yaml"])
    examples.append(configmap_copy)
if not os.path.exists(binary):
    problem(binary, "not built, so the example configurations cannot be checked: run `make build` first")
else:
    for example in examples:
        result = subprocess.run([binary, "check-config", "--config", os.path.join(ROOT, example)], capture_output=True, text=True)
        # Files that exist only where the gateway is deployed (keys, passwords, certificates) may
        # be missing here; nothing else may be wrong.
        lines = [line for line in result.stderr.splitlines() if line.strip().startswith("- ")]
        tolerated = lines and all("cannot read" in line and re.search(r"(\.|_)file: ", line) for line in lines)
        if result.returncode != 0 and not tolerated:
            problem(os.path.join(ROOT, example), f"authgate check-config refuses it: {result.stderr.strip() or result.stdout.strip()}")

if problems:
    print("deploy-check: " + str(len(problems)) + " problem(s)")
    for line in problems:
        print("  - " + line)
    sys.exit(1)
print(f"deploy-check: ok ({len(yaml_files)} YAML files, Kubernetes manifests, Dockerfile, compose, systemd unit)")
