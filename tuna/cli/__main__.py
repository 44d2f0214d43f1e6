"""``python -m tuna.cli``: the ``tuna`` command (go_fish starts local workers this way)."""

from tuna.cli import main

main(prog_name="tuna")
