# notes/wide-rows/warp_ring_model.py: random-interleaving model of multicast.cu's warp ring (mcw_norm) for
# one warp group (warp w of the C blocks of a cluster): mbarrier phases / pending counts / tx counts, multicast copies delivered to each block at random
# times, the issuer's blocking and opportunistic refills. Checks: no deadlock, every wait returns the round
# it expects with the stage holding that round, no copy lands on a stage a member has not released, no
# barrier is ever two phases ahead of a waiter (parity aliasing). A warp is one actor (its lanes meet at the
# __syncwarp before the release, and lane 0 arms and issues). Bytes are abstract (every round carries some:
# rounds without a valid chunk are skipped alike by all members). Run: python3 warp_ring_model.py (~4 s).
import random, sys

class Bar:
    def __init__(s, count): s.count, s.pending, s.tx, s.phase = count, count, 0, 0
    def _chk(s):
        if s.pending == 0 and s.tx == 0: s.phase += 1; s.pending = s.count
    def arrive(s, expect=0): s.tx += expect; s.pending -= 1; assert s.pending >= 0; s._chk()
    def complete_tx(s, b): s.tx -= b; s._chk()
    def done(s, parity, expect_phase):  # try_wait.parity; expect_phase: the phase index the waiter means
        assert s.phase in (expect_phase, expect_phase + 1), ("parity alias", s.phase, expect_phase)
        return (s.phase & 1) != parity

def run(C, S, R, seed):
    rng = random.Random(seed)
    full = [[Bar(1) for _ in range(S)] for _ in range(C)]
    empty = [Bar(C) for _ in range(S)]
    data = [[None] * S for _ in range(C)]
    released = [[st - S for st in range(S)] for _ in range(C)]  # last round each block released per stage
    inflight = []  # (block, stage, round)
    home = rng.randrange(C)
    def issue(m):
        st = m % S
        for b in range(C): inflight.append((b, st, m))
    def member(b):
        issuer = b == home
        nxt = min(S, R); ns = 0; nph = 0
        if issuer:
            for k in range(nxt): issue(k)
        s = 0; ph = 0
        for k in range(R):
            if C > 1 and issuer and nxt <= k:
                assert nxt == k
                while not empty[ns].done(nph, (nxt - S) // S): yield
                issue(nxt); nxt += 1; ns += 1
                if ns == S: ns = 0; nph ^= 1
            full[b][s].arrive(16 + 0)  # bytes: any positive amount, equal to the copy's
            while not full[b][s].done(ph, k // S): yield
            assert data[b][s] == k, ("stale", b, s, data[b][s], k)
            yield  # reading
            assert data[b][s] == k, ("overwritten while read", b, s, k)
            released[b][s] = k
            if k + S < R:
                if C == 1: issue(k + S)
                else: empty[s].arrive()
            if C > 1 and issuer:
                while nxt < R and empty[ns].done(nph, (nxt - S) // S):
                    issue(nxt); nxt += 1; ns += 1
                    if ns == S: ns = 0; nph ^= 1
            s += 1
            if s == S: s = 0; ph ^= 1
            yield
    actors = {b: member(b) for b in range(C)}
    steps = 0
    while actors or inflight:
        steps += 1
        assert steps < 100000, "livelock"
        choices = [('a', b) for b in actors] + [('c', i) for i in range(len(inflight))]
        kind, x = rng.choice(choices)
        if kind == 'a':
            try: next(actors[x])
            except StopIteration: del actors[x]
        else:
            b, st, m = inflight.pop(x)
            assert released[b][st] == m - S, ("copy over an unreleased stage", b, st, m, released[b][st])
            data[b][st] = m
            full[b][st].complete_tx(16)
    # every barrier quiescent: nothing pending beyond the protocol
    return steps

n = 0
for C in (1, 2, 4):
    for S in (1, 2, 3, 4):
        for R in range(1, 12):
            for seed in range(300):
                run(C, S, R, seed * 7919 + R * 31 + S * 7 + C); n += 1
print("ok", n, "runs")
