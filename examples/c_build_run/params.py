# The C build+run example's parameter file (Python form; see reference/search.md section 1).
#
# Build-time parameters change the binary (a rebuild); the runtime-only ones, named by
# META_get_no_rebuild_params, are arguments of the run. The blocked kernel needs n to be a
# multiple of the tile, which META_is_config_valid says, so those configs are never built or run.
# The runtime parameters come first, so the naive (declaration) order would rebuild at every run.

n = [48, 64]  # runtime: matrix order
reps = [1, 2]  # runtime: multiplies per run
tile = [8, 16, 32]  # build-time: -DTILE
opt = ["-O1", "-O2"]  # build-time: compiler optimisation flag

_private_note = ["ignored: a leading underscore keeps a list out of the parameters"]


def META_get_no_rebuild_params():
    return ["n", "reps"]


def META_is_config_valid(config):
    return config["n"] % config["tile"] == 0
