# Conformance with ROBOTIS' own Python SDK (dynamixel-sdk 4.1.0 from PyPI), run by hand (not in CI):
#   cargo run -p clawrl-firmware --bin clawrl-virtual-board -- --pty   # prints /dev/pts/N
#   python3 firmware/tools/dynamixel_sdk_check.py /dev/pts/N
import sys
# pip install dynamixel-sdk==4.1.0 pyserial  (or put them on PYTHONPATH)
from dynamixel_sdk import PortHandler, PacketHandler, GroupSyncWrite, GroupSyncRead, COMM_SUCCESS
import time

path = sys.argv[1]
port = PortHandler(path)
assert port.openPort() and port.setBaudRate(57600)
ph = PacketHandler(2.0)
ok = 0
checks = 8
def check(cond, what):
    global ok
    print(("PASS " if cond else "FAIL ") + what)
    ok += bool(cond)
    return cond

model, res, err = ph.ping(port, 1)
check(res == COMM_SUCCESS and model == 0xC1A0, f"ping servo 1: model {model:#x} res {res} err {err}")
model, res, err = ph.ping(port, 100)
check(res == COMM_SUCCESS and model == 0xC1B0, f"ping board: model {model:#x}")
pos, res, err = ph.read4ByteTxRx(port, 3, 132)
check(res == COMM_SUCCESS and pos == 2048 + round(-1.6 * 4096 / 6.283185307), f"read knee present position {pos}")
res, err = ph.write1ByteTxRx(port, 100, 64, 1)
check(res == COMM_SUCCESS and err == 0, f"ENABLE via board Safety Command: res {res} err {err}")
sw = GroupSyncWrite(port, ph, 116, 4)
goal = 2048 + round(0.5 * 4096 / 6.283185307)
for i in (2, 5, 8, 11):
    sw.addParam(i, list(goal.to_bytes(4, "little")))
check(sw.txPacket() == COMM_SUCCESS, "sync write hip-pitch goals to 0.5 rad")
time.sleep(0.4)
fr = GroupSyncRead(port, ph, 132, 4)
for i in (2, 5, 8, 11):
    fr.addParam(i)
res = fr.fastSyncRead()
vals = {i: fr.getData(i, 132, 4) for i in (2, 5, 8, 11)}
check(res == COMM_SUCCESS and all(abs(v - goal) <= 2 for v in vals.values()), f"FAST SYNC READ present positions {vals} (goal {goal})")
res = fr.txRxPacket()
vals = {i: fr.getData(i, 132, 4) for i in (2, 5, 8, 11)}
check(res == COMM_SUCCESS and all(abs(v - goal) <= 2 for v in vals.values()), f"SYNC READ present positions {vals}")
res, err = ph.write1ByteTxRx(port, 100, 64, 2)
check(res == COMM_SUCCESS, "DISABLE")
print(f"{ok} passed, {checks - ok} failed")
sys.exit(0 if ok == checks else 1)
