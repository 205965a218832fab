"""The files an ``--input`` entry names: one rule for arrays (.npy, .bin) and JPEGs (.jpg, .jpeg),
each refusal naming the entry, the input and what was expected."""

import pytest

from ascend_engine.bench import jpegs
from ascend_engine.bench.data import DataError, files_of


def test_a_folder_gives_its_files_of_the_kind_in_name_order(tmp_path):
    for name in ("b.npy", "a.bin", "c.txt", "d.JPG", "e.jpeg"):
        (tmp_path / name).write_bytes(b"x")
    assert files_of(str(tmp_path), "x") == [str(tmp_path / "a.bin"), str(tmp_path / "b.npy")]
    assert jpegs.files_of(str(tmp_path), "jpeg") == [str(tmp_path / "d.JPG"), str(tmp_path / "e.jpeg")]


@pytest.mark.parametrize("kind, message", [
    ("array", "--input folder {d} (input 'x') holds no .npy or .bin files"),
    ("jpeg", "--input folder {d} (bytes input 'x') holds no .jpg or .jpeg files"),
])
def test_a_folder_without_files_of_the_kind_is_refused(tmp_path, kind, message):
    (tmp_path / "notes.txt").write_bytes(b"x")
    read = files_of if kind == "array" else jpegs.files_of
    with pytest.raises(DataError) as refused:
        read(str(tmp_path), "x")
    assert str(refused.value) == message.format(d=tmp_path)


def test_a_file_of_another_kind_or_none_is_refused(tmp_path):
    other = tmp_path / "a.png"
    other.write_bytes(b"x")
    with pytest.raises(DataError, match=r"\(input 'x'\): expected a \.npy or \.bin file$"):
        files_of(str(other), "x")
    with pytest.raises(DataError, match=r"\(bytes input 'x'\): expected a \.jpg or \.jpeg file$"):
        jpegs.files_of(str(other), "x")
    with pytest.raises(DataError, match=r"^--input: no file or folder .*missing \(input 'x'\)$"):
        files_of(str(tmp_path / "missing"), "x")
