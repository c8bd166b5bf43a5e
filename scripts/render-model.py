#!/usr/bin/env python3
"""Renders the quadruped standing in its default pose to a PNG (docs/quadruped.png).

Uses MuJoCo's own Python package (the same loader as `python -m mujoco.viewer`), off-screen:
    pip install mujoco==3.17.0 pillow
    MUJOCO_GL=egl python3 scripts/render-model.py docs/quadruped.png
"""
import os
import sys

import mujoco
from PIL import Image

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
model = mujoco.MjModel.from_xml_path(os.path.join(root, "sim/models/quadruped.xml"))
data = mujoco.MjData(model)
mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
for _ in range(500):  # one second on its servos
    mujoco.mj_step(model, data)

model.vis.global_.offwidth, model.vis.global_.offheight = 720, 480
renderer = mujoco.Renderer(model, 480, 720)
camera = mujoco.MjvCamera()
camera.lookat[:] = [0, 0, 0.12]
camera.distance, camera.azimuth, camera.elevation = 0.85, 135, -20
renderer.update_scene(data, camera)
Image.fromarray(renderer.render()).save(sys.argv[1] if len(sys.argv) > 1 else "quadruped.png")
