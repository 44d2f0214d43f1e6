from __future__ import annotations

import pytest

from tuna.errors import NotFoundError, TunaError
from tuna.fleet.machines import (
    add_machine,
    get_machine,
    list_machines,
    mark_seen,
    remove_machine,
    set_machine,
)


def test_add_list_set_remove(db):
    a = add_machine(
        db,
        "gpu-01",
        user="tuna",
        arch="gfx90a",
        num_cu=104,
        gpus=[0, 1],
        docker_settings={"compile_workers": 8},
    )
    b = add_machine(db, "gpu-02", port=2222, arch="gfx942", num_cu=304, gpus=[0])
    add_machine(db, "gpu-03", arch="gfx90a", num_cu=110, available=False)
    assert [m.hostname for m in list_machines(db)] == ["gpu-01", "gpu-02", "gpu-03"]
    assert [m.hostname for m in list_machines(db, arch="gfx90a")] == ["gpu-01", "gpu-03"]
    assert [m.hostname for m in list_machines(db, arch="gfx90a", available_only=True)] == ["gpu-01"]
    assert [m.hostname for m in list_machines(db, num_cu=304)] == ["gpu-02"]
    assert [m.hostname for m in list_machines(db, ids=[b.id])] == ["gpu-02"]
    assert a.gpus == (0, 1) and a.compile_workers == 8 and a.docker == "docker"
    assert a.host.known_hosts_name == "gpu-01" and b.host.known_hosts_name == "[gpu-02]:2222"

    changed = set_machine(
        db,
        "gpu-01",
        gpus=[0, 1, 2, 3],
        docker_settings={"docker": "sudo docker", "compile_workers": None},
    )
    assert changed.gpus == (0, 1, 2, 3)
    assert dict(changed.docker_settings) == {"docker": "sudo docker"}
    assert get_machine(db, a.id).docker == "sudo docker"
    assert remove_machine(db, str(b.id)).hostname == "gpu-02"
    with pytest.raises(NotFoundError, match="no machine 'gpu-02'"):
        get_machine(db, "gpu-02")


def test_a_machine_is_registered_once(db):
    add_machine(db, "gpu-01")
    with pytest.raises(TunaError, match="gpu-01:22 is already registered"):
        add_machine(db, "gpu-01")
    add_machine(db, "gpu-01", port=2222)  # another sshd on the same host is another machine


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dockr": "x"}, "unknown docker setting 'dockr'"),
        ({"compile_workers": "8"}, "'compile_workers' must be a int"),
        ({"run_args": "--ipc host"}, "'run_args' must be a list"),
        ({"lock_dir": 5}, "'lock_dir' must be a str"),
    ],
)
def test_bad_docker_settings_are_refused(db, settings, message):
    with pytest.raises(TunaError, match=message):
        add_machine(db, "gpu-01", docker_settings=settings)
    assert list_machines(db) == []


def test_unknown_fields_are_refused(db):
    add_machine(db, "gpu-01")
    with pytest.raises(TunaError, match="no field 'password'"):
        set_machine(db, "gpu-01", password="hunter2")


def test_mark_seen_sets_last_seen_on_the_database_clock(db):
    a, b = add_machine(db, "gpu-01"), add_machine(db, "gpu-02")
    mark_seen(db, [a.id])
    assert get_machine(db, a.id).last_seen is not None
    assert get_machine(db, b.id).last_seen is None
