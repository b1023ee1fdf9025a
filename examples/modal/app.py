"""tally on Modal (serverless GPUs): the bundle rides in the image at /opt/tally, the program runs
under `tally record` (so its trace closes when it ends, whatever ends it), and the traces land
on a Volume, not the container's throw-away filesystem.

    make dist WITH_CUPTI=1 && mkdir -p /opt/tally && \
        tar -C /opt/tally --strip-components=1 -xzf tally-*-with-cupti.tar.gz
    modal run examples/modal/app.py                    # then: modal volume get tally-traces /

Not run in CI (no Modal account there).  What CI does run is the bundle itself, read-only at
/opt/tally, with the same command line (tests/dist/test-bundle.sh).  Modal runs containers
under gVisor; the CUDA injection and LD_PRELOAD tally uses are ordinary loader features, but
they have not been tried there.
"""
import glob
import subprocess

import modal

BUNDLE = "/opt/tally"  # the unpacked bundle on this machine
app = modal.App("tally-example")
image = (
    # a CUDA 13 runtime image has no CUPTI: the WITH_CUPTI=1 bundle carries one.  PyTorch for
    # CUDA 13 brings its own CUPTI, and tally uses that one (tally doctor says which).
    modal.Image.from_registry("nvidia/cuda:13.0.1-runtime-ubuntu24.04", add_python="3.12")
    .pip_install("torch")
    .add_local_dir(BUNDLE, "/opt/tally")
    .add_local_file("train.py", "/root/train.py")
)
traces = modal.Volume.from_name("tally-traces", create_if_missing=True)


@app.function(gpu="H100", image=image, volumes={"/traces": traces}, timeout=3600)
def train() -> int:
    tally = "/opt/tally/bin/tally"
    subprocess.run([tally, "doctor", "-o", "/traces/run-%h-%p"])
    status = subprocess.run(
        [tally, "record", "-o", "/traces/run-%h-%p", "--", "python", "/root/train.py"]
    ).returncode
    subprocess.run([tally, "check", *sorted(glob.glob("/traces/run-*.tally"))])
    traces.commit()
    return status


@app.local_entrypoint()
def main():
    print("train.py exit status", train.remote())
