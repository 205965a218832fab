"""DB text-detection post-processing (ascend_engine.steps.ocr): the C code equals
its numpy reference bit for bit on random and edge maps, and each definition of
docs/executor.md, "DB text boxes", holds on maps whose answer is known."""

import numpy as np
import pytest

from ascend_engine.steps import ocr

BOTH = [ocr.db_boxes, ocr.db_boxes_reference]


def blob_map(rng, h, w, blobs):
    """Text-like maps: a few filled rotated rectangles of random probability over low noise."""
    prob = (rng.random((h, w)) * 0.35).astype(np.float32)
    yy, xx = np.mgrid[0:h, 0:w]
    for _ in range(blobs):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        angle = rng.uniform(-0.6, 0.6)
        half_l, half_s = rng.uniform(1, w / 3), rng.uniform(0.5, 6)
        a = (xx - cx) * np.cos(angle) + (yy - cy) * np.sin(angle)
        b = -(xx - cx) * np.sin(angle) + (yy - cy) * np.cos(angle)
        inside = (np.abs(a) <= half_l) & (np.abs(b) <= half_s)
        prob[inside] = rng.uniform(0.4, 1.0)
    return prob


def assert_same(prob, picture=None, **kw):
    boxes, scores = ocr.db_boxes(prob, picture, **kw)
    want_boxes, want_scores = ocr.db_boxes_reference(prob, picture, **kw)
    assert boxes.shape == want_boxes.shape and boxes.dtype == np.float32
    np.testing.assert_array_equal(boxes, want_boxes)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-6)
    return boxes, scores


def test_c_equals_the_reference_on_random_text_maps():
    rng = np.random.default_rng(35)
    found = 0
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(8, 90, 2))
        prob = blob_map(rng, h, w, int(rng.integers(0, 8)))
        picture = (h * 2.5, w * 1.5, rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0))
        picture = None if rng.random() < 0.3 else picture
        kw = {"thresh": float(rng.uniform(0.2, 0.6)), "box_thresh": float(rng.uniform(0.0, 0.7)),
              "unclip_ratio": float(rng.uniform(0.0, 2.5)), "min_size": float(rng.integers(0, 5)),
              "max_candidates": int(rng.integers(1, 12))}
        boxes, _ = assert_same(prob, picture, **kw)
        found += len(boxes)
    assert found > 40   # the maps give boxes, so equality says something


def test_c_equals_the_reference_on_noise():
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        prob = (rng.random((h, w)) ** rng.uniform(0.3, 3)).astype(np.float32)
        boxes, _ = assert_same(prob, thresh=float(rng.uniform(0.1, 0.9)),
                               box_thresh=float(rng.uniform(0, 0.8)), min_size=float(rng.integers(0, 3)),
                               max_candidates=int(rng.integers(1, 60)))
        found += len(boxes)
    assert found > 30


@pytest.mark.parametrize("find", BOTH)
def test_empty_and_one_pixel_maps_give_no_box(find):
    for prob in (np.zeros((30, 40), np.float32), np.zeros((1, 1), np.float32), np.ones((1, 1), np.float32)):
        boxes, scores = find(prob)
        assert boxes.shape == (0, 4, 2) and scores.shape == (0,)
    one = np.zeros((9, 9), np.float32)
    one[4, 4] = 1.0
    # a single pixel: a rectangle of sides 0, kept by min_size 0, then no growth (perimeter 0): under 2
    assert len(find(one, min_size=0.0)[0]) == 0


@pytest.mark.parametrize("find", BOTH)
def test_a_block_at_the_corner_grows_by_area_ratio_over_perimeter_and_is_clamped(find):
    prob = np.zeros((20, 30), np.float32)
    prob[0:5, 0:10] = 0.9                      # pixel centres span 9 x 4
    boxes, scores = find(prob)
    d = 9 * 4 * 1.5 / (2 * (9 + 4))
    want = [(0, 0), (9 + d, 0), (9 + d, 4 + d), (0, 4 + d)]   # the left and top sides clamped to 0
    np.testing.assert_allclose(boxes[0], want, atol=1e-5)
    np.testing.assert_allclose(scores, [0.9], rtol=1e-6)
    assert len(boxes) == 1


@pytest.mark.parametrize("find", BOTH)
def test_all_equal_scores_give_the_whole_map(find):
    prob = np.full((12, 16), 0.7, np.float32)
    boxes, scores = find(prob, unclip_ratio=0.0)
    np.testing.assert_allclose(boxes[0], [(0, 0), (15, 0), (15, 11), (0, 11)], atol=1e-5)
    np.testing.assert_allclose(scores, [0.7], rtol=1e-6)
    boxes, _ = find(prob)        # grown past the map: clamped to its size (16 x 12)
    assert boxes[0].max(axis=0).tolist() == [16.0, 12.0]


def blocks(h=40, w=60):
    """Five 3 x 8 blocks whose raster order (first pixel) is not their left-to-right order."""
    prob = np.zeros((h, w), np.float32)
    tops = [(2, 40), (5, 2), (5, 20), (20, 10), (30, 30)]
    for y, x in tops:
        prob[y:y + 3, x:x + 8] = 0.8
    return prob, tops


@pytest.mark.parametrize("find", BOTH)
def test_boxes_come_in_raster_order_and_only_the_first_max_candidates_regions_count(find):
    prob, tops = blocks()
    boxes, _ = find(prob, unclip_ratio=0.0, min_size=0.0)
    assert [(int(b[0, 1]), int(b[0, 0])) for b in boxes] == tops
    boxes, _ = find(prob, unclip_ratio=0.0, min_size=0.0, max_candidates=3)
    assert [(int(b[0, 1]), int(b[0, 0])) for b in boxes] == tops[:3]
    # regions filtered out still count against max_candidates (PP-OCR's order: candidates, then filters)
    prob[2:5, 40:48] = 0.35
    boxes, _ = find(prob, unclip_ratio=0.0, min_size=0.0, max_candidates=3)
    assert [(int(b[0, 1]), int(b[0, 0])) for b in boxes] == tops[1:3]


@pytest.mark.parametrize("find", BOTH)
def test_blocks_meeting_at_a_corner_are_one_region(find):
    prob = np.zeros((14, 24), np.float32)
    prob[2:6, 2:10] = 0.9
    prob[6:10, 10:18] = 0.9                     # touches the first block only at a corner: 8-connectivity
    boxes, _ = find(prob, unclip_ratio=0.0, box_thresh=0.3)   # its rectangle holds zeros too
    assert len(boxes) == 1
    assert boxes[0, :, 0].min() < 2.5 and boxes[0, :, 0].max() > 16.5
    prob[6:10, 10] = 0.0                        # one column apart: two regions
    assert len(find(prob, box_thresh=0.3)[0]) == 2


@pytest.mark.parametrize("find", BOTH)
def test_a_rotated_region_gets_its_rotated_rectangle_in_ppocr_corner_order(find):
    prob = np.zeros((60, 80), np.float32)
    yy, xx = np.mgrid[0:60, 0:80]
    angle = np.deg2rad(20)
    a = (xx - 40) * np.cos(angle) + (yy - 30) * np.sin(angle)
    b = -(xx - 40) * np.sin(angle) + (yy - 30) * np.cos(angle)
    prob[(np.abs(a) <= 25) & (np.abs(b) <= 5)] = 0.9
    (box,), _ = find(prob, unclip_ratio=0.0)
    top = box[1] - box[0]
    assert abs(np.degrees(np.arctan2(top[1], top[0])) - 20) < 3     # the long side along the text
    assert box[0, 0] < box[1, 0] and box[3, 1] > box[0, 1]          # top-left, top-right, ..., bottom-left
    assert 47 < np.hypot(*top) <= 51 and 8 < np.hypot(*(box[3] - box[0])) <= 11


@pytest.mark.parametrize("find", BOTH)
def test_thresholds_and_minimum_size(find):
    prob = np.zeros((20, 40), np.float32)
    prob[2:6, 2:30] = 0.5
    prob[10:13, 2:30] = 0.9                    # three pixel rows: a side of 2, under min_size 3
    assert len(find(prob, box_thresh=0.6)[0]) == 0
    assert len(find(prob, box_thresh=0.5)[0]) == 1
    assert len(find(prob, box_thresh=0.5, min_size=1.0)[0]) == 2
    assert len(find(prob, thresh=0.5, box_thresh=0.5, min_size=1.0)[0]) == 1   # above thresh, not at it


@pytest.mark.parametrize("find", BOTH)
def test_boxes_go_back_to_the_picture_and_stay_in_it(find):
    prob = np.zeros((32, 64), np.float32)
    prob[4:12, 40:64] = 0.9
    boxes, _ = find(prob, (40.0, 100.0, 0.5, 0.8), unclip_ratio=0.0)
    np.testing.assert_allclose(boxes[0], [(50, 8), (78.75, 8), (78.75, 22), (50, 22)], rtol=1e-6)
    grown, _ = find(prob, (40.0, 70.0, 0.5, 0.8))
    assert grown[0, :, 0].max() == 70.0       # clamped to the picture's width


@pytest.mark.parametrize("find", BOTH)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_map_is_refused_naming_the_step(find, bad):
    prob = np.zeros((6, 8), np.float32)
    prob[2, 3] = bad
    what = "NaN" if np.isnan(bad) else "an infinity"
    with pytest.raises(ValueError, match=rf"step 'det_post': the map holds {what} at \(y=2, x=3\)"):
        find(prob, name="det_post")


def test_bad_arguments_are_refused():
    prob = np.zeros((6, 8), np.float32)
    with pytest.raises(ValueError, match=r"the map must be \(H, W\) float32, got float64"):
        ocr.db_boxes(prob.astype(np.float64))
    with pytest.raises(ValueError, match="unclip_ratio must be >= 0, got -1"):
        ocr.db_boxes(prob, unclip_ratio=-1)
    with pytest.raises(ValueError, match="max_candidates must be between 1 and"):
        ocr.db_boxes(prob, max_candidates=0)
    with pytest.raises(ValueError, match="thresh must be a finite number, got nan"):
        ocr.db_boxes(prob, thresh=float("nan"))
    with pytest.raises(ValueError, match=r"picture row \(height, width, ratio_h, ratio_w\) must be finite "
                                         r"and above 0, got \(10, 10, 0, 1\)"):
        ocr.db_boxes(prob, (10, 10, 0, 1))


def numpy_ctc(probs):
    best = probs.argmax(axis=-1)
    out = np.full(best.shape, -1, np.int32)
    for i, row in enumerate(best):
        keep = [c for j, c in enumerate(row) if c != 0 and (j == 0 or c != row[j - 1])]
        out[i, :len(keep)] = keep
    return out


def test_ctc_greedy_equals_numpy():
    rng = np.random.default_rng(3)
    for _ in range(40):   # rows under and over the 16 values a vectorised step takes
        lines, cols = (int(v) for v in rng.integers(1, 12, 2))
        classes = int(rng.integers(1, 90))
        probs = rng.integers(0, 6, (lines, cols, classes)).astype(np.float32)   # ties: the first class wins
        np.testing.assert_array_equal(ocr.ctc_greedy(probs), numpy_ctc(probs))
    probs = rng.random((3, 20, 6625), np.float32)       # a recognizer's classes
    np.testing.assert_array_equal(ocr.ctc_greedy(probs), numpy_ctc(probs))
    probs[1, 7, 5000] = np.nan
    with pytest.raises(ValueError, match=r"ctc: NaN at column 7, class 5000 \(line 1\)"):
        ocr.ctc_greedy(probs)
    probs = np.zeros((1, 5, 3), np.float32)
    probs[0, [0, 1, 3, 4], [2, 2, 2, 1]] = 1.0          # 2 2 blank 2 1 -> 2 2 1
    np.testing.assert_array_equal(ocr.ctc_greedy(probs), [[2, 2, 1, -1, -1]])
    with pytest.raises(ValueError, match=r"ctc: more than 2 characters in a line \(line 0\)"):
        ocr.ctc_greedy(probs, max_chars=2)
    probs[0, 2, 1] = np.nan
    with pytest.raises(ValueError, match=r"ctc: NaN at column 2, class 1 \(line 0\)"):
        ocr.ctc_greedy(probs)
