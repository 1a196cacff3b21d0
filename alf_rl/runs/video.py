"""Writes rendered frames as an animated GIF or an MP4 video."""

import os
from typing import Any, Sequence


def write_video(frames: Sequence[Any], path: str, fps: int = 30) -> int:
    """Writes RGB frames ([H, W, 3] uint8 each) to a .gif or .mp4 file.

    Args:
        frames: list of [H, W, 3] uint8 arrays.
        path: output path; the suffix chooses the format.
        fps: frames per second.

    Returns:
        The number of frames in the file written: for a GIF, Pillow merges
        identical consecutive frames (adding up their durations), so it may
        be fewer than ``len(frames)``.

    Raises:
        ValueError: no frames, an unknown suffix, or ``.mp4`` without
            imageio.
    """
    if not frames:
        raise ValueError("no frames to write to %s" % path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == '.gif':
        from PIL import Image
        images = [Image.fromarray(f) for f in frames]
        images[0].save(path,
                       save_all=True,
                       append_images=images[1:],
                       duration=max(int(1000 / fps), 20),
                       loop=0)
        with Image.open(path) as written:
            return int(getattr(written, 'n_frames', 1))
    elif suffix == '.mp4':
        try:
            import imageio
            import imageio_ffmpeg  # noqa: F401 (imageio's mp4 writer)
        except ImportError as e:
            raise ValueError("writing .mp4 needs the [render] extra "
                             "(pip install 'alf_rl[render]')") from e
        imageio.mimwrite(path, list(frames), fps=fps)
        return len(frames)
    else:
        raise ValueError("--record_file must end in .gif or .mp4, got %r" %
                         path)
