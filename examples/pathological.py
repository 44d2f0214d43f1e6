# reference/search.md section 1's pathological case: one runtime-only and one build-time
# parameter. In declaration order every run needs a new build (6 builds for 6 runs); grouped
# by build tuple, 2 builds do.
audio_batch_size = [128, 256, 512]  # runtime-only: no rebuild
gpu_batch_size = [128, 256]  # build-time


def META_get_no_rebuild_params():
    return ["audio_batch_size"]
