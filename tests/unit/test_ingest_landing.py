"""Poison landing files of ingest: ``check_landing_file`` on real files, streamed in chunks -- what
is unreadable, and where (line, byte offset)."""

from __future__ import annotations

import gzip

import pyarrow as pa
import pyarrow.parquet as pq

from acidflow.ingest import landing
from acidflow.ingest.landing import check_landing_file


def test_text_files(tmp_path, monkeypatch):
    """UTF-8 text passes (also split across chunks); NUL bytes, other encodings and a file ending
    inside a character are named with line and offset."""
    monkeypatch.setattr(landing, "CHUNK", 7)  # many chunk boundaries
    ok = tmp_path / "ok.csv"
    ok.write_text("id,city\n1,Zürich\n2,Łódź\n3,東京\n", encoding="utf-8")
    assert check_landing_file(str(ok), "csv") is None
    nul = tmp_path / "nul.jsonl"
    nul.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a"\x00: 3}\n')
    u = check_landing_file(str(nul), "jsonl")
    assert (u.line, u.offset) == (3, 22) and u.source == f"{nul}:3"
    assert u.reason == "binary content: NUL byte at byte offset 22 (line 3)"
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,city\n1,Zürich\n".encode("latin-1"))
    u = check_landing_file(str(latin), "csv")
    assert (u.line, u.offset) == (2, 11) and "byte 0xfc" in u.reason
    cut = tmp_path / "cut.csv"
    cut.write_bytes("id,city\n1,東".encode("utf-8")[:-1])
    assert "ends inside a multi-byte character" in check_landing_file(str(cut), "csv").reason


def test_gzip_files(tmp_path):
    """A complete .gz passes; a truncated one, a corrupt one and one that is no gzip at all are
    unreadable, named."""
    data = "".join(f"{i},x\n" for i in range(5000)).encode()
    good = tmp_path / "a.csv.gz"
    good.write_bytes(gzip.compress(data))
    assert check_landing_file(str(good), "csv") is None
    trunc = tmp_path / "b.csv.gz"
    trunc.write_bytes(gzip.compress(data)[:-12])
    u = check_landing_file(str(trunc), "csv")
    assert u.reason.startswith("truncated gzip stream") and u.path == str(trunc)
    notgz = tmp_path / "c.jsonl.gz"
    notgz.write_bytes(b"plain text, not gzip\n")
    assert "gzip" in check_landing_file(str(notgz), "jsonl").reason
    corrupt = tmp_path / "d.csv.gz"
    raw = bytearray(gzip.compress(data))
    raw[40:60] = b"\xff" * 20
    corrupt.write_bytes(bytes(raw))
    assert check_landing_file(str(corrupt), "csv") is not None


def test_parquet_files(tmp_path):
    """A Parquet file passes; no magic, a cut-off footer and a corrupt data page are unreadable."""
    good = tmp_path / "a.parquet"
    pq.write_table(
        pa.table({"id": list(range(1000)), "s": [str(i) * 5 for i in range(1000)]}),
        good,
        compression="snappy",
    )
    assert check_landing_file(str(good), "parquet") is None
    body = good.read_bytes()
    (tmp_path / "b.parquet").write_bytes(b"id,s\n1,a\n")
    assert check_landing_file(str(tmp_path / "b.parquet"), "parquet").reason.startswith(
        "not a Parquet file"
    )
    (tmp_path / "c.parquet").write_bytes(body[:-5])
    assert check_landing_file(str(tmp_path / "c.parquet"), "parquet").reason.startswith(
        "truncated Parquet file"
    )
    bad = bytearray(body)
    bad[8:400] = b"\x00" * 392
    (tmp_path / "d.parquet").write_bytes(bytes(bad))
    assert check_landing_file(str(tmp_path / "d.parquet"), "parquet").reason.startswith(
        "unreadable Parquet"
    )
