"""The engine's image operations (kernels_wasm/engine/image.c and mask.c: wrt_img_*) against python_ref.vision
(sample.py, segment.py) on every engine build here: the native library (its x86-64 build), the scalar, SIMD128 and
relaxed wasm modules (wasmtime) and the aarch64 NEON build under qemu (-cpu max and cortex-a53: the test driver's
`call`, tests/aarch64_steps.py, one driver process per CPU); in Node through js_bindings/vision/imgops.js against the
JS ports. Every output is exact (bytes, and float32 words for the float outputs): the C follows python_ref's float64
/ float32 / integer rules. Hostile arguments (buffers smaller than the shapes, non-finite geometry, bad channels) are
errors, never reads past a buffer."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from python_ref.vision import sample, segment
from python_ref.vision.constants import BLUR_MAX_RADIUS, SMOOTHING_POLY
from wasmrt.errors import WasmrtError

sys.path.insert(0, str(Path(__file__).parent / "js"))
from aarch64_steps import CPUS, QemuImageHost  # tests/ is on sys.path under pytest
from js_fixtures import NODE22

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["native", "wasm:scalar", "wasm:simd", "wasm:relaxed", *(f"aarch64:{cpu}" for cpu in CPUS)]


@pytest.fixture(scope="module", params=TARGETS)
def ops(request: pytest.FixtureRequest):  # -> ImageOps
    from wasmrt.vision.imgops import ImageOps

    engine, _, variant = request.param.partition(":")
    if engine == "aarch64":
        return ImageOps(engine, variant, host=QemuImageHost(variant))
    try:
        return ImageOps(engine, variant or None)
    except WasmrtError as e:
        pytest.skip(f"{request.param}: {e}")


RNG = np.random.default_rng(43)
IMAGES = [RNG.integers(0, 256, shape, dtype=np.uint8) for shape in [(1, 1, 3), (37, 53, 4), (48, 64, 3), (91, 5, 4)]]
# (cx, cy, w, h, angle, n_w, n_h, border) as fractions of the image's width / height where they are positions
RECTS = [(0.5, 0.5, 1.0, 1.0, 0.0, 16, 16, "zero"), (0.3, 0.6, 0.8, 1.3, 0.7, 24, 19, "replicate"),
         (-0.1, 1.1, 2.0, 1.0, -2.9, 9, 31, "zero"), (0.5, 0.5, 1.5, 1.5, math.pi / 2, 33, 33, "replicate"),
         (0.25, 0.75, 0.1, 0.1, 3.0, 7, 5, "replicate")]
NORMS = [(0.0, 255.0), (127.5, 127.5), (123.675, 58.395)]  # [0, 1] (palm, hands, face landmarks, selfie), [-1, 1]
# (face detector), and one whose float32 quotient differs from the float64 one rounded (image.c then uses its table)


def rect(img: np.ndarray, r: tuple) -> tuple:
    h, w = img.shape[:2]
    cx, cy, rw, rh, a, nw, nh, border = r
    return cx * w, cy * h, rw * w, rh * h, a, nw, nh, border


@pytest.mark.parametrize("k", range(len(IMAGES)))
def test_crop_equals_python_ref(ops, k: int) -> None:
    img = IMAGES[k]
    for r in RECTS:
        args = rect(img, r)
        np.testing.assert_array_equal(ops.sample_rect(img, *args), sample.sample_rect(img, *args))
        for mean, div in NORMS:
            got, want = ops.sample_input(img, *args, mean, div), sample.sample_input(img, *args, mean, div)
            assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (r, mean, div)


def test_crop_of_a_real_photo(ops) -> None:
    """The rotated hand crop (224 x 224, replicate) and the letterbox (zero border) on a photo."""
    from skimage import data

    img = data.astronaut()
    for args in [(300.0, 200.0, 180.5, 180.5, 0.4, 224, 224, "replicate"),
                 (256.0, 256.0, 512.0, 512.0, 0.0, 192, 192, "zero"),
                 (256.0, 256.0, 512.0, 512.0, 0.0, 256, 144, "zero")]:
        assert ops.sample_input(img, *args, 0.0, 255.0).tobytes() == sample.sample_input(img, *args, 0.0,
                                                                                         255.0).tobytes()


def test_rotated_rgba_crops_four_pixels_at_a_time(ops) -> None:
    """image.c samples rotated RGBA crops four output pixels at a time while all their taps lie inside the image:
    groups inside, groups across each edge (one by one), row lengths that are not a multiple of four, both borders,
    every normalisation and the bytes; a centre at half-steps of 1/32 pixel (rint's ties, to even)."""
    img = RNG.integers(0, 256, (83, 97, 4), dtype=np.uint8)
    for args in [(40.0 + 1 / 64, 30.0 + 3 / 64, 50.0, 41.0, 0.3, 37, 29, "replicate"),
                 (40.0 + 1 / 64, 30.0 + 3 / 64, 60.0, 60.0, -2.2, 40, 40, "zero"),
                 (90.0, 5.0, 70.0, 30.0, 1.1, 43, 18, "replicate"), (2.0, 80.0, 40.0, 70.0, -0.6, 21, 33, "zero")]:
        np.testing.assert_array_equal(ops.sample_rect(img, *args), sample.sample_rect(img, *args), str(args))
        for mean, div in NORMS:
            assert ops.sample_input(img, *args, mean, div).tobytes() == sample.sample_input(img, *args, mean,
                                                                                            div).tobytes(), args


def test_wide_outputs_cross_the_column_chunks(ops) -> None:
    """image.c computes column coordinates in chunks of 512 columns: outputs wider than one chunk."""
    for img in (IMAGES[2], RNG.integers(0, 256, (48, 64, 4), dtype=np.uint8)):  # RGB, and RGBA's float32 lanes
        for args in [(30.0, 20.0, 50.0, 40.0, 0.3, 1100, 3, "replicate"),
                     (10.0, 40.0, 70.0, 10.0, -1.0, 513, 2, "zero"),
                     (30.0, 20.0, 50.0, 40.0, 0.0, 1100, 3, "replicate"),
                     (32.0, 24.0, 64.0, 48.0, 0.0, 700, 4, "zero")]:
            assert ops.sample_input(img, *args, 0.0, 255.0).tobytes() == sample.sample_input(img, *args, 0.0,
                                                                                             255.0).tobytes(), args
    small = RNG.random((4, 9)).astype(np.float32)
    for w, h in [(1100, 3), (512, 2), (1025, 1)]:
        assert ops.resize_mask(small, w, h).tobytes() == segment.resize_mask(small, w, h).tobytes()


def test_unrotated_crops_outside_the_image(ops) -> None:
    """image.c samples crops without rotation (sine 0) by rows and columns: edges outside the image on every side,
    zero and replicated borders, shrinking and enlarging, beside python_ref."""
    for img in IMAGES:
        for r in [(-0.1, 1.1, 2.0, 1.0, 0.0, 9, 31, "zero"), (-0.1, 1.1, 2.0, 1.0, 0.0, 9, 31, "replicate"),
                  (1.2, -0.3, 0.7, 3.1, 0.0, 40, 13, "zero"), (0.5, 0.5, 1.3, 0.4, -0.0, 17, 64, "replicate"),
                  (0.5, 0.5, 1.0, 1.0, 0.0, 3, 2, "zero")]:
            args = rect(img, r)
            np.testing.assert_array_equal(ops.sample_rect(img, *args), sample.sample_rect(img, *args), str(r))
            assert ops.sample_input(img, *args, 0.0, 255.0).tobytes() == sample.sample_input(img, *args, 0.0,
                                                                                             255.0).tobytes()


def test_unrotated_rgba_rows_on_the_grid(ops) -> None:
    """image.c blends only the top taps of an unrotated RGBA row that falls on a pixel row (a downscale by 2, as the
    selfie input of a 640 x 512 frame): rows on the grid inside the image, outside it with both borders, rows off
    the grid beside them."""
    img = RNG.integers(0, 256, (48, 64, 4), dtype=np.uint8)
    for args in [(32.0, 24.0, 64.0, 48.0, 0.0, 32, 24, "zero"), (32.0, 10.0, 64.0, 48.0, 0.0, 32, 24, "zero"),
                 (32.0, 10.0, 64.0, 48.0, 0.0, 32, 24, "replicate"), (20.0, 40.0, 30.0, 48.0, 0.0, 25, 24, "zero"),
                 (32.0, 24.0, 64.0, 47.0, 0.0, 32, 24, "zero")]:
        for mean, div in NORMS:
            assert ops.sample_input(img, *args, mean, div).tobytes() == sample.sample_input(img, *args, mean,
                                                                                            div).tobytes(), args


def test_masks_upsampled_to_frame_sizes(ops) -> None:
    """The mask resize keeps the interpolated source rows while output rows share them: the selfie models' masks to
    frame sizes (up and down, odd ratios)."""
    for (sh, sw), (h, w) in [((256, 256), (480, 640)), ((144, 256), (360, 641)), ((144, 256), (97, 130)),
                             ((3, 2), (250, 7))]:
        small = (RNG.random((sh, sw)) * 1.2 - 0.1).astype(np.float32)
        assert ops.resize_mask(small, w, h).tobytes() == segment.resize_mask(small, w, h).tobytes(), (sh, sw, h, w)


def test_composite_at_every_alpha_step(ops) -> None:
    """Mask values at and beside each alpha step (k + 0.5) / 255 in float32, clipped values and NaN, composited four
    RGBA pixels at a time and one by one (a length that is not a multiple of four)."""
    steps = (np.arange(256, dtype=np.float64) - 0.5) / 255
    around = np.concatenate([np.nextafter(steps.astype(np.float32), np.float32(-1)), steps.astype(np.float32),
                             np.nextafter(steps.astype(np.float32), np.float32(2)),
                             np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, 1.5, -3.0], np.float32)])
    mask = around[: around.size - around.size % 7].reshape(-1, 7).astype(np.float32)
    h, w = mask.shape
    for channels, bg_channels in [(4, 4), (4, 3), (3, 4)]:
        fg = RNG.integers(0, 256, (h, w, channels), dtype=np.uint8)
        bg = RNG.integers(0, 256, (h, w, bg_channels), dtype=np.uint8)
        np.testing.assert_array_equal(ops.composite(fg, mask, bg), segment.composite(fg, mask, bg))
        for colour in [(0, 177, 64), (255, 0, 255), (0, 0, 0), (255, 255, 255)]:  # bg_channels 0: one colour
            np.testing.assert_array_equal(ops.replace_background(fg, mask, colour),
                                          segment.replace_background(fg, mask, colour), str(colour))


def test_composite_of_runs_of_one_alpha(ops) -> None:
    """image.c copies the frame's or the background's bytes for 16 mask values whose alphas are all 255 or all 0,
    deciding on the floats: runs of one value at and beside both edges (509/510 and 1/510 in float32), clipped
    values and NaN, a mixed run, and a tail shorter than a run."""
    edges = [np.float32(509 / 510), np.float32(1 / 510)]
    values = [v for e in edges for v in (np.nextafter(e, np.float32(-1)), e, np.nextafter(e, np.float32(2)))]
    values += [np.float32(v) for v in (np.nan, -np.inf, np.inf, 0.0, -0.0, 1.0, 2.0, -3.0, 0.5)]
    runs = [np.full(16, v, np.float32) for v in values] + [np.linspace(-0.1, 1.1, 16, dtype=np.float32)]
    mask = np.concatenate([*runs, np.full(9, values[1], np.float32)]).reshape(1, -1)
    h, w = mask.shape
    fg = RNG.integers(0, 256, (h, w, 4), dtype=np.uint8)
    bg = RNG.integers(0, 256, (h, w, 4), dtype=np.uint8)
    np.testing.assert_array_equal(ops.composite(fg, mask, bg), segment.composite(fg, mask, bg))
    np.testing.assert_array_equal(ops.replace_background(fg, mask, (0, 177, 64)),
                                  segment.replace_background(fg, mask, (0, 177, 64)))


def test_mask_frame_is_resize_then_smooth(ops) -> None:
    """wrt_img_mask_frame (a segmenter's frame: the mask resized to the frame and smoothed with the previous one in
    one pass) gives resize_mask then smooth's bytes: widths across the 512-column chunks and not a multiple of 4,
    ratio 0 (no smoothing), no previous mask, and the output written over the previous mask; a ratio outside [0, 1]
    (NaN too) is an error, as in python_ref."""
    for (sh, sw), (h, w), ratio in [((256, 256), (480, 640), 0.7), ((144, 256), (7, 1030), 0.3), ((5, 7), (3, 5), 0.7),
                                    ((4, 4), (6, 9), 0.0), ((4, 4), (6, 9), 1.0)]:
        small = (RNG.random((sh, sw)) * 1.4 - 0.2).astype(np.float32)
        small.reshape(-1)[1] = np.nan
        prev = RNG.random((h, w)).astype(np.float32)
        want = segment.smooth(segment.resize_mask(small, w, h), prev, ratio)
        assert ops.mask_frame(small, w, h, prev, ratio).tobytes() == want.tobytes(), (sh, sw, h, w, ratio)
        assert ops.mask_frame(small, w, h, None, ratio).tobytes() == segment.resize_mask(small, w, h).tobytes()
        if ops.engine == "native":  # out over prev, as the segmenters keep it (JS: imgops_parity.mjs, wasm)
            same = prev.copy()
            ops._run("wrt_img_mask_frame", [small, small.nbytes, sw, sh, same, same, same.nbytes, w, h, ratio,
                                            *SMOOTHING_POLY], [same])
            assert same.tobytes() == want.tobytes()
    for ratio in (math.nan, -0.1, 1.5):
        with pytest.raises(ValueError, match="smoothing ratio must be in"):
            segment.smooth(prev, prev, ratio)
        with pytest.raises(WasmrtError, match=r"smoothing ratio must be in \[0, 1\], got"):
            ops.mask_frame(small, w, h, prev, ratio)
        with pytest.raises(WasmrtError if ops.host is not None else ValueError, match="smoothing ratio must be in"):
            ops.smooth(prev, prev, ratio)
    with pytest.raises(WasmrtError, match="wrt_img_mask_frame: source holds 64 bytes, needs 80"):
        ops._run("wrt_img_mask_frame", [small, small.nbytes, 4, 5, prev, prev, prev.nbytes, 9, 6, 0.7,
                                        *SMOOTHING_POLY], [prev])


def _saturated_mask(sh: int, sw: int) -> np.ndarray:
    """A model mask as the selfie models give it: runs of exactly 1 and exactly 0 (the sigmoid saturated), -0, NaN
    and values between."""
    small = RNG.random((sh, sw)).astype(np.float32)
    small[sh // 4: sh // 2, :] = 1.0
    small[:, : sw // 3] = 0.0
    small[sh // 2:, sw // 2:] = 1.0
    small[-1, 0], small[0, -1], small[sh // 2, sw // 2] = -0.0, np.nan, 0.5
    return small


def test_mask_composite_is_mask_frame_then_replace_background(ops) -> None:
    """wrt_img_mask_composite (a frame's mask made and the frame composited by it, row by row) gives mask_frame then
    replace_background's bytes, and the mask: frames of 3 and 4 channels over a colour and over RGB and RGBA images,
    widths across the 512-column chunks and not a multiple of 16; frame after frame, the previous mask that one."""
    for (sh, sw), (h, w), channels, bg in [((256, 256), (48, 640), 4, "colour"), ((19, 23), (37, 700), 4, 4),
                                           ((144, 256), (33, 57), 3, 3), ((5, 7), (6, 9), 4, 3),
                                           ((19, 23), (20, 1030), 3, "colour")]:
        frame = RNG.integers(0, 256, (h, w, channels), dtype=np.uint8)
        background = (0, 177, 64) if bg == "colour" else RNG.integers(0, 256, (h, w, bg), dtype=np.uint8)
        prev_ref = prev_eng = None
        for t in range(3):
            small = _saturated_mask(sh, sw)
            small[0, t] = 0.25  # the frames differ a little, as a camera's
            want_mask, want = segment.mask_composite(small, prev_ref, 0.7, frame, background)
            got_mask, got = ops.mask_composite(small, prev_eng, 0.7, frame, background)
            assert got_mask.tobytes() == want_mask.tobytes(), (sh, sw, h, w, t)
            np.testing.assert_array_equal(got, want, f"{(sh, sw, h, w, channels, bg, t)}")
            want_mask2 = segment.smooth(segment.resize_mask(small, w, h), prev_ref, 0.7)
            assert want_mask.tobytes() == want_mask2.tobytes()
            np.testing.assert_array_equal(want, segment.replace_background(frame, want_mask, background))
            prev_ref, prev_eng = want_mask, got_mask
    with pytest.raises(WasmrtError, match="wrt_img_mask_composite: image holds 7 bytes, needs 216"):
        ops._run("wrt_img_mask_composite", [small, small.nbytes, sw, sh, None, want_mask, want_mask.nbytes, 9, 6, 0.7,
                                            *SMOOTHING_POLY, frame, frame.nbytes, 4, frame, 3, 0, frame.copy(), 7], [])
    with pytest.raises(WasmrtError, match="wrt_img_mask_composite: frame holds 12 bytes, needs 216"):
        ops._run("wrt_img_mask_composite", [small, small.nbytes, sw, sh, None, want_mask, want_mask.nbytes, 9, 6, 0.7,
                                            *SMOOTHING_POLY, frame, 12, 4, frame, 3, 0, frame.copy(), frame.nbytes],
                 [])
    with pytest.raises(WasmrtError, match=r"wrt_img_mask_composite: the smoothing ratio must be in \[0, 1\]"):
        ops.mask_composite(small, None, 1.5, frame, (0, 0, 0))
    with pytest.raises(ValueError, match="differ in size"):
        ops.mask_composite(small, None, 0.7, frame, frame[1:])


def test_saturated_mask_blocks_are_exact(ops) -> None:
    """mask.c fills 16 values whose taps are all exactly 0 or all exactly 1 without interpolating, leaves those equal
    to the previous mask's without smoothing, and copies the frame or the background for them: blocks beside
    saturated ones, a block one value off (1 - 2^-24, 2^-149, -0), upsampled and downsampled, the previous mask
    differing in one value of a saturated block."""
    for (sh, sw), (h, w) in [((16, 16), (40, 64)), ((64, 64), (20, 16)), ((9, 40), (11, 35))]:
        small = np.zeros((sh, sw), np.float32)
        small[:, sw // 2:] = 1.0
        for k, v in enumerate([np.nextafter(np.float32(1), np.float32(0)), np.float32(2.0 ** -149), -0.0]):
            small[(k * 3) % sh, (k * 5 + sw // 2 - 1) % sw] = v
        small[-3:, : sw // 2] = -0.0  # taps all -0: the value is -0 (not +0's block)
        frame = RNG.integers(0, 256, (h, w, 4), dtype=np.uint8)
        prev = segment.resize_mask(small, w, h)
        prev[h // 2, 1], prev[h // 2, -2] = 0.75, 0.5  # one value in a block of 0s, one of 1s: not this frame's
        prev[0, 0] = -0.0
        for previous in (None, prev):
            want_mask, want = segment.mask_composite(small, previous, 0.7, frame, (9, 8, 7))
            got_mask, got = ops.mask_composite(small, previous, 0.7, frame, (9, 8, 7))
            assert got_mask.tobytes() == want_mask.tobytes(), (sh, sw, h, w, previous is None)
            np.testing.assert_array_equal(got, want)
            assert ops.mask_frame(small, w, h, previous, 0.7).tobytes() == want_mask.tobytes()
            made = segment.resize_mask(small, w, h)
            assert ops.smooth(made, prev, 0.7).tobytes() == segment.smooth(made, prev).tobytes()


def test_mask_resize_smoothing_compositing_blur_equal_python_ref(ops) -> None:
    for img in IMAGES:
        h, w = img.shape[:2]
        for sh, sw in [(1, 1), (5, 7), (144, 256)]:
            small = (RNG.random((sh, sw)) * 1.2 - 0.1).astype(np.float32)
            assert ops.resize_mask(small, w, h).tobytes() == segment.resize_mask(small, w, h).tobytes()
        mask = segment.resize_mask((RNG.random((5, 7)) * 1.2 - 0.1).astype(np.float32), w, h)
        prev = RNG.random((h, w)).astype(np.float32)
        for ratio in (0.7, 0.3, 0.0):
            assert ops.smooth(mask, prev, ratio).tobytes() == segment.smooth(mask, prev, ratio).tobytes()
        assert ops.smooth(mask, None).tobytes() == mask.tobytes()
        flat = mask.reshape(-1)
        flat[: min(3, flat.size)] = [np.nan, np.inf, -np.inf][: flat.size]
        for bg_channels in (3, 4):
            bg = RNG.integers(0, 256, (h, w, bg_channels), dtype=np.uint8)
            np.testing.assert_array_equal(ops.composite(img, mask, bg), segment.composite(img, mask, bg))
        np.testing.assert_array_equal(ops.replace_background(img, mask, (0, 177, 64)),
                                      segment.replace_background(img, mask, (0, 177, 64)))
        for radius in (0, 1, 2, 8, 30, BLUR_MAX_RADIUS):
            np.testing.assert_array_equal(ops.box_blur(img, radius), segment.box_blur(img, radius), f"r={radius}")
        np.testing.assert_array_equal(ops.box_blur(img, 3, 0), segment.box_blur(img, 3, 0))
        np.testing.assert_array_equal(ops.box_blur(img, 2, 5), segment.box_blur(img, 2, 5))


def test_blur_division_by_one_multiply_is_exact() -> None:
    """image.c divides a box sum s (<= 255 n) + r by n = 2r + 1 as ((s + r) * ceil(2^32 / n)) >> 32: every value."""
    for r in range(1, BLUR_MAX_RADIUS + 1):
        n = 2 * r + 1
        magic = ((1 << 32) + n - 1) // n
        x = np.arange(0, 255 * n + 1, dtype=np.uint64) + np.uint64(r)
        assert ((x * np.uint64(magic)) >> np.uint64(32) == x // np.uint64(n)).all(), n


def test_composite_division_by_shifts_is_exact() -> None:
    """image.c's composite divides y = fg a + bg (255 - a) + 127 (<= 65152) by 255 as (y + (y >> 8) + 1) >> 8."""
    y = np.arange(0, 255 * 255 + 128, dtype=np.int64)
    assert ((y + (y >> 8) + 1) >> 8 == y // 255).all()


def test_smoothing_of_odd_lengths_and_nan(ops) -> None:
    """The smoothing runs four values at a time, then one by one: every length around 4, NaN and out-of-range."""
    for n in range(1, 11):
        new = (RNG.random(n) * 1.4 - 0.2).astype(np.float32)
        prev = RNG.random(n).astype(np.float32)
        new[n // 2] = np.nan
        assert ops.smooth(new, prev).tobytes() == segment.smooth(new, prev).tobytes()


def test_hostile_arguments_are_errors(ops) -> None:
    from wasmrt.vision.imgops import ImageOps

    img = IMAGES[1]
    h, w = img.shape[:2]
    run = ops._run
    small = np.zeros(16, np.uint8)
    out8 = np.zeros((4, 4, 3), np.uint8)
    outf = np.zeros((4, 4, 3), np.float32)
    crop = [small, small.nbytes, 8, 8, 4, 4.0, 4.0, 8.0, 8.0, 1.0, 0.0, 4, 4, 0, 0.0, 255.0, out8, out8.nbytes, 0]
    with pytest.raises(WasmrtError, match="source holds 16 bytes, needs 256"):
        run("wrt_img_crop", crop, [out8])
    bad_out = [*crop[:16], outf, 8, 1]
    bad_out[0], bad_out[1] = img, img.nbytes
    with pytest.raises(WasmrtError, match="output holds 8 bytes, needs 192"):
        run("wrt_img_crop", bad_out, [outf])
    for name, value, pattern in [(5, math.nan, "must be finite"), (7, math.inf, "must be finite"),
                                 (9, 3.0, "must be finite"), (11, 0, "size 0x4"), (12, 40000, "size 4x40000"),
                                 (13, 2, "zero_border and out_float"), (4, 5, "channels must be 3 or 4")]:
        args = list(crop)
        args[0], args[1], args[2], args[3] = img, img.nbytes, w, h
        args[name] = value
        with pytest.raises(WasmrtError, match=pattern):
            run("wrt_img_crop", args, [out8])
    with pytest.raises(WasmrtError, match="non-zero divisor"):
        ops.sample_input(img, 4, 4, 8, 8, 0.0, 4, 4, "zero", 0.0, 0.0)
    mask = np.zeros(6, np.float32)
    with pytest.raises(WasmrtError, match="source holds 24 bytes, needs 40"):
        run("wrt_img_resize_mask", [mask, mask.nbytes, 5, 2, outf, outf.nbytes, 4, 4], [outf])
    with pytest.raises(WasmrtError, match="mask is NULL"):
        run("wrt_img_smooth", [None, None, outf, 4, 0.7, 1.0, 1.0, 1.0, 1.0, 1.0], [outf])
    with pytest.raises(WasmrtError, match="background holds 2 bytes, needs 3"):
        run("wrt_img_composite", [img, img.nbytes, 4, np.zeros((h, w), np.float32), h * w * 4, small, 2, 0, w, h,
                                  img.copy(), img.nbytes], [])
    with pytest.raises(WasmrtError, match="mask holds 24 bytes, needs"):
        run("wrt_img_composite", [img, img.nbytes, 4, mask, mask.nbytes, img, img.nbytes, 4, w, h, img.copy(),
                                  img.nbytes], [])
    with pytest.raises(WasmrtError, match=r"radius must be 0..127"):
        ops.box_blur(img, BLUR_MAX_RADIUS + 1)
    with pytest.raises(ValueError, match=r"radius must be 0..127"):
        segment.box_blur(img, BLUR_MAX_RADIUS + 1)
    with pytest.raises(ValueError, match="border must be"):
        ops.sample_rect(img, 4, 4, 8, 8, 0.0, 4, 4, "wrap")
    with pytest.raises(ValueError, match="HxWx3"):
        ops.sample_rect(img[..., :2], 4, 4, 8, 8, 0.0, 4, 4)
    assert run("wrt_img_box_blur_scratch", [0, 5], []) == 0
    with pytest.raises(ValueError, match="engine must be"):
        ImageOps("gpu")
    # still usable after the errors
    np.testing.assert_array_equal(ops.sample_rect(img, 4, 4, 8, 8, 0.0, 4, 4), sample.sample_rect(img, 4, 4, 8, 8,
                                                                                                   0.0, 4, 4))


def test_aarch64_driver_checks_the_image_calls() -> None:
    """The driver's image calls take the kinds of imgops.SIGNATURES (its call list is generated from them): other
    kinds are refused, the driver then ends and the next call starts it again; a size_t result comes back whole."""
    from wasmrt.vision.imgops import SIGNATURES, ImageOps

    drv = QemuImageHost("max").driver
    with pytest.raises(RuntimeError, match=r"wrt_img_box_blur_scratch takes \(ii\), the host sent \(iz\)"):
        drv.call("wrt_img_box_blur_scratch", "iz", [4, 4], [])
    with pytest.raises(RuntimeError, match="wrt_img_warp is not a training or image export"):
        drv.call("wrt_img_warp", "ii", [4, 4], [])
    native = ImageOps("native").host
    assert native is not None
    for w, h in [(4, 4), (641, 359), (8192, 8192), (0, 5)]:
        assert drv.call("wrt_img_box_blur_scratch", SIGNATURES["wrt_img_box_blur_scratch"][1], [w, h], []) == \
            native.call("wrt_img_box_blur_scratch", [w, h], []) == (0 if w == 0 else ((w * h * 3 + 3) & ~3) + w * 12)


def test_python_pipelines_use_the_engine_operations() -> None:
    """wasmrt.vision's pipelines on native / wasm take the engine's operations; ref keeps python_ref's."""
    from wasmrt.vision import engine_ops
    from wasmrt.vision.imgops import ImageOps

    assert engine_ops("ref") is None
    ops = engine_ops("wasm", "scalar")
    assert isinstance(ops, ImageOps) and ops.engine == "wasm"
    from python_ref.vision.hands import HandTracker
    from python_ref.vision.segment import SelfieSegmenter

    assert HandTracker(lambda f: f, lambda f: f, ops=ops).sample == ops.sample_input
    assert SelfieSegmenter({}, ops=ops).ops is ops


@pytest.mark.skipif(not NODE22.exists() or shutil.which("node") is None, reason="needs Node 22 (node_modules)")
def test_js_engine_operations_equal_the_js_ports() -> None:
    r = subprocess.run([str(NODE22), "--test", "tests/js/imgops_parity.mjs"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert r.stdout.count("\nok ") == 7, r.stdout[-3000:]  # three modules, crop rows, options.out, own previous
    # mask, a segmenter compositing its frames


def test_modules_built_for_models_leave_the_image_operations_out() -> None:
    """`wasmrt build --for` modules have no wrt_img_* (their size budget): the JS pipelines fall back to JS there, and
    Python's ImageOps says what is missing."""
    import wasmtime

    from wasmrt.dev import build
    from wasmrt.dev.modules import build_for
    from wasmrt.paths import models_dir
    from wasmrt.vision.imgops import ImageOps

    model = models_dir() / "face_landmark.wrt"
    if not model.is_file():
        pytest.skip("bundled models missing: run python -m wasmrt.zoo.bundle")
    out = ROOT / "build" / "modules" / "imgops-face"
    build_for([model], out, ("simd",))
    def exports(path: Path) -> set[str]:
        return {e.name for e in wasmtime.Module.from_file(wasmtime.Engine(), path).exports}

    names = exports(out / "wasmrt-simd.wasm")
    assert not names & set(build.IMAGE_EXPORTS) and "wrt_run" in names
    assert set(build.IMAGE_EXPORTS) <= exports(build.PACKAGE_DIST / "wasmrt-simd.wasm")
    with pytest.raises(WasmrtError, match="lacks the image operations"):
        ImageOps("wasm", "simd", folder=out)
