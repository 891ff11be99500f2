"""The node's OCI images are written by hand (no registry, no image tool): check the layout."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

from envtest.node_build import _write_oci_archive


def test_oci_archive_is_a_consistent_image_layout(tmp_path: Path) -> None:
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tarfile.TarInfo("hello")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    archive = tmp_path / "image.tar"
    _write_oci_archive(archive, "jobgate.local/test:1", layer.getvalue(), {"Cmd": ["/hello"]})

    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def blob(digest: str) -> bytes:
        data = files["blobs/sha256/" + digest.removeprefix("sha256:")]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
        return data

    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    [entry] = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "jobgate.local/test:1"
    manifest = json.loads(blob(entry["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    [layer_entry] = manifest["layers"]
    unpacked = gzip.decompress(blob(layer_entry["digest"]))
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(unpacked).hexdigest()]
    assert config["config"] == {"Cmd": ["/hello"]} and config["os"] == "linux"
