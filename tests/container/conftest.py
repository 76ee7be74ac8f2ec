"""The container tests' engine: podman (with runc, as this machine needs), a Debian
bookworm base image made locally with debootstrap, and the Relaygate image built on it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = "localhost/relaygate-test-base:bookworm"
IMAGE = "localhost/relaygate:test"
MIRROR = "http://deb.debian.org/debian"


def _engine_missing() -> str | None:
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    return f"no container engine: {', '.join(missing)} not installed (make container-engine, as root)" if missing else None


def _mirror() -> str:
    """The Debian mirror the machine's own apt sources name."""
    for source in sorted(Path("/etc/apt").glob("sources.list*")) + sorted(Path("/etc/apt/sources.list.d").glob("*")):
        if source.is_file():
            for line in source.read_text().splitlines():
                words = line.split()
                if words[:1] == ["URIs:"] and "debian" in words[1] and "security" not in words[1]:
                    return words[1]
                if words[:1] == ["deb"] and "debian" in words[1] and "security" not in words[1]:
                    return words[1]
    return MIRROR


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The podman command line; skips the test without podman, runc and debootstrap."""
    if (missing := _engine_missing()) is not None:
        pytest.skip(missing)
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    os.environ["CONTAINERS_CONF"] = str(conf)
    return ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        message = f"{' '.join(command[:6])} … failed ({done.returncode}): {done.stderr[-3000:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return done


@pytest.fixture(scope="session")
def image(podman: list[str], dependency_wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    if subprocess.run([*podman, "image", "exists", BASE]).returncode != 0:
        rootfs = tmp_path_factory.mktemp("rootfs") / "bookworm"
        _run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", "bookworm", str(rootfs), _mirror()])
        subprocess.run(["sh", "-c", f"rm -rf {rootfs}/var/cache/apt/archives/*.deb {rootfs}/var/cache/apt/*.bin"], check=True)
        _run(["sh", "-c", f"tar -C {rootfs} -c . | {' '.join(podman)} import - {BASE}"])
        shutil.rmtree(rootfs, ignore_errors=True)
    context = tmp_path_factory.mktemp("context")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, context / name)
    shutil.copytree(dependency_wheels, context / "wheelhouse")
    _run([*podman, "build", "--format", "docker", "--network=host", "--build-arg", f"BASE={BASE}", "--build-arg", "PIP_NO_INDEX=1",
          "-t", IMAGE, "-f", "Containerfile", str(context)])  # fmt: skip
    return IMAGE

