"""A small gesture set read from one hand's landmarks (constants.py holds every number).

Finger states come from the world landmarks (metres: no perspective, no image scale), directions from the image
landmarks (y down):
  a finger (index, middle, ring, pinky) is extended when |tip - wrist| > FINGER_EXTENDED * |PIP - wrist|, else
    folded (a straight finger reaches ~1.35x further than its PIP joint, a curled one folds back inside it);
  the thumb is extended when |tip - middle MCP| > THUMB_EXTENDED * |thumb MCP - middle MCP| (away from the palm);
  a vector points up when -dy > DIRECTION_COS * |v| (within 45 degrees of the image's up), down when dy > that.
Gestures, first match wins:
  thumb_up / thumb_down  four fingers folded, thumb extended, thumb MCP -> tip pointing up / down
  closed_fist            four fingers folded (and not a thumb up/down)
  open_palm              all five extended
  victory                index and middle extended, ring and pinky folded
  pointing_up            index extended and its MCP -> tip pointing up, middle, ring and pinky folded
  None                   anything else
"""

from __future__ import annotations

import numpy as np

from python_ref.vision.constants import DIRECTION_COS, FINGER_EXTENDED, FINGERS, THUMB, THUMB_EXTENDED


def finger_states(world: np.ndarray) -> dict[str, bool]:
    """{"thumb", "index", "middle", "ring", "pinky"} -> extended, from world landmarks [21, 3]."""
    w = np.asarray(world, dtype=np.float64)[:, :3]

    def d(a: int, b: int) -> float:
        return float(np.linalg.norm(w[a] - w[b]))

    out = {"thumb": d(THUMB["tip"], THUMB["palm"]) > THUMB_EXTENDED * d(THUMB["mcp"], THUMB["palm"])}
    for name, (_, pip, tip) in FINGERS.items():
        out[name] = d(tip, 0) > FINGER_EXTENDED * d(pip, 0)
    return out


def direction(lm: np.ndarray, a: int, b: int) -> str | None:
    """"up", "down" or None for the image vector a -> b."""
    v = np.asarray(lm, dtype=np.float64)[b, :2] - np.asarray(lm, dtype=np.float64)[a, :2]
    n = float(np.hypot(v[0], v[1]))
    if n == 0:
        return None
    if -v[1] > DIRECTION_COS * n:
        return "up"
    if v[1] > DIRECTION_COS * n:
        return "down"
    return None


def gesture(landmarks: np.ndarray, world: np.ndarray) -> str | None:
    """The gesture name (constants.GESTURES) or None."""
    s = finger_states(world)
    four = [s[f] for f in ("index", "middle", "ring", "pinky")]
    if not any(four):
        if s["thumb"]:
            way = direction(landmarks, THUMB["mcp"], THUMB["tip"])
            if way is not None:
                return f"thumb_{way}"
        return "closed_fist"
    if all(four) and s["thumb"]:
        return "open_palm"
    if four == [True, True, False, False]:
        return "victory"
    if four == [True, False, False, False] and direction(landmarks, FINGERS["index"][0], FINGERS["index"][2]) == "up":
        return "pointing_up"
    return None
