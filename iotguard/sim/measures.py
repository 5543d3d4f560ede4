# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""How every policy is judged (doc/source/reference/simulator.rst).

Plain functions over ``(windows, disks)`` arrays of throughput, demand and
oracle allocation, all in device-seconds per second (the cost model's
unit), so a 4 KiB and a 64 KiB disk are compared by what they cost the
storage. Windows are one control interval. ``target = min(floor, demand)``;
floors and weights are ``(windows, disks)`` (a disk's tier may change) or
one per disk for the whole run. A load change excludes the window it falls
in and the next one (the "two windows after each load change") from the
steady-state measures.
"""

import numpy as np

from iotguard.policy import allocation
from iotguard.policy import base
from iotguard.sim import loop
from iotguard.sim import scenario as scenario_mod
from iotguard.sim import storage
from iotguard.wire import caps

KEPT = 0.95
SETTLE_WINDOWS = 2
KEYS = ('floor_kept', 'worst_window', 'utilisation', 'work_conservation',
        'time_to_restore_s', 'reclaims', 'reclaim_p50_s', 'reclaim_p99_s',
        'reclaim_max_s', 'compliance', 'compliance_worst', 'min_max_ratio',
        'cap_churn_per_min', 'cap_changes_per_10min',
        'innocent_throttle_rate',
        'fairness', 'oracle_distance', 'quiet_kept', 'quiet_worst',
        'quiet_latency_ms', 'burst_s', 'burst_floor_kept', 'latency_kept',
        'latency_p99_worst_ms')

#: The windows a latency objective is judged over (:func:`latency_kept`).
LATENCY_WINDOW_S = 10.0

#: A floor-holder beside a burst is judged at this share of its target
#: (:func:`bursts`).
BURST_KEPT = 0.9


def oracle(capacity: base.FloatArray, floors: base.FloatArray,
           demands: base.FloatArray,
           weights: base.FloatArray) -> base.FloatArray:
    """The weighted max-min fair allocation of each window, true demands."""
    result = np.zeros_like(demands)
    floors = np.broadcast_to(floors, demands.shape)
    weights = np.broadcast_to(weights, demands.shape)
    for k in range(len(capacity)):
        result[k], _ = allocation.fair_shares(float(capacity[k]), floors[k],
                                              demands[k], weights[k])
    return result


def fair_capacity(floors: base.FloatArray, demand: base.FloatArray,
                  slots: base.FloatArray, weights: base.FloatArray,
                  domain: scenario_mod.Domain,
                  rounds: int = 30) -> float:
    """What the array serves when its load is split fairly (one window).

    The array serves more at a deeper queue, but the queue is shared by
    parallelism: to give a disk its fair share a controller must keep the
    deeper queues short, and the array then serves less. With shares in
    proportion to ``q ** share_exponent`` the allocation ``a`` is served
    at depths ``q_i = lambda * a_i ** (1 / share_exponent)``; the deepest
    feasible ``lambda`` is bounded by each disk's processes (``slots``).
    Iterate ``capacity -> allocation -> depth -> speed(depth)`` from the
    saturated capacity down to its fixed point.
    """
    active = demand > 0
    if not active.any():
        return 0.0
    floors, demand = floors[active], demand[active]
    slots, weights = slots[active], weights[active]
    capacity = storage.speed(float(slots.sum()), domain)
    for _ in range(rounds):
        alloc, _ = allocation.fair_shares(capacity, floors, demand, weights)
        depth = np.maximum(alloc, 1e-12) ** (1.0 / domain.share_exponent)
        scale = float(np.min(slots / depth))
        new = storage.speed(scale * float(depth.sum()), domain)
        if abs(new - capacity) < 1e-9:
            break
        capacity = min(capacity, new)
    return capacity


def settling(times: base.FloatArray, window_s: float,
             change_times: list[float]) -> base.BoolArray:
    """Windows that start within two windows after a load change."""
    mask = np.zeros(len(times), dtype=bool)
    for c in change_times:
        mask |= (times + window_s > c) & (
            times < c + (SETTLE_WINDOWS - 1) * window_s + 1e-9)
    return mask


def _judged(target: base.FloatArray, settle: base.BoolArray
            ) -> base.BoolArray:
    result: base.BoolArray = (target > 0) & ~settle[:, None]
    return result


def floor_kept(x: base.FloatArray, target: base.FloatArray,
               settle: base.BoolArray, kept: float = KEPT) -> float:
    """Share of judged (disk, window) pairs at >= ``kept`` x target."""
    judged = _judged(target, settle)
    if not judged.any():
        return 1.0
    return float(np.mean(x[judged] >= kept * target[judged]))


def bursts(run: loop.Run, target: base.FloatArray, settle: base.BoolArray
           ) -> tuple[float, float]:
    """Burst seconds delivered, and the floors kept beside them.

    A disk of a tier with a burst bursts in a window where it moves more
    than 5 % above its bytes/s ceiling (its tier's, or the static limit
    the scenario gives it): the seconds of such windows, summed. The
    other disks with a floor: the share of judged windows at
    :data:`BURST_KEPT` x ``min(floor, demand)`` (:func:`floor_kept`).
    """
    ceiling = []
    bursting = []
    for vm in run.scenario.vms:
        tier = run.scenario.tiers[vm.tier].at(vm.size_gib)
        ceiling.append(min(tier.max_bytes_sec or np.inf, caps.ceiling(
            vm.limits, 'bytes_sec')) / 1024.0)
        bursting.append(tier.burst_factor > 0)
    over = run.kbs > 1.05 * np.array(ceiling)[None, :]
    burst = np.array(bursting, dtype=bool)
    seconds = float(over[:, burst].sum()) * run.window_s
    return seconds, floor_kept(run.work[:, ~burst], target[:, ~burst],
                               settle, BURST_KEPT)


#: The tail a 99th percentile leaves (:func:`mixture_p99_ms`).
P99_TAIL = 0.01

#: Bisection steps of :func:`mixture_p99_ms` (the bracket, at most
#: ``ln(100)`` times the spread of the means, halved each step).
P99_STEPS = 60


def mixture_p99_ms(mean_ms: base.FloatArray,
                   share: base.FloatArray) -> base.FloatArray:
    """The 99th percentile of a mixture of exponentials, over axis 1.

    ``mean_ms`` and ``share`` are ``(groups, members, columns)``: member
    ``k`` of a group has exponential response times of mean ``m_k`` and
    the share ``w_k`` of the group's operations. The percentile is the
    ``x`` with ``sum_k w_k exp(-x / m_k) = 0.01`` (shares normalised;
    members of mean or share 0 leave nothing in the tail), found for every
    ``(group, column)`` at once by bisection between ``ln(100)`` times the
    smallest and the largest mean of the members with a share. One member
    of mean ``m``: ``m ln(100)``, as admission predicts a p99
    (:data:`iotguard.policy.base.P99_MEANS`). ``(groups, columns)``;
    0 where no member has both a mean and a share.
    """
    held = (mean_ms > 0) & (share > 0)
    w = np.where(held, share, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    m = np.where(held, mean_ms, 1.0)
    lo = np.log(1 / P99_TAIL) * np.where(held, mean_ms, np.inf).min(axis=1)
    hi = np.log(1 / P99_TAIL) * np.where(held, mean_ms, 0.0).max(axis=1)
    lo = np.where(held.any(axis=1), lo, 0.0)
    for _ in range(P99_STEPS):
        mid = (lo + hi) / 2
        tail = (w * np.exp(-mid[:, None, :] / m)).sum(axis=1)
        above = tail > P99_TAIL
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    result: base.FloatArray = (lo + hi) / 2
    return result


def latency_kept(run: loop.Run) -> tuple[float, float]:
    """Latency objectives kept, and the worst 10 s p99 of their disks.

    Each disk of a tier with ``latency_p99_ms``, over consecutive
    :data:`LATENCY_WINDOW_S` windows: the simulator knows each run window's
    mean latency per operation, not each operation's, so the 99th
    percentile is modelled as admission's (exponential response times,
    ``ln(100)`` x the mean): the disk's operations in the 10 s window are
    a mixture over the run's windows inside, each exponential with that
    window's mean, weighted by the window's share of the disk's bytes
    (of its operations at a fixed I/O size), and the p99 is that
    mixture's (:func:`mixture_p99_ms`). The share of such windows with
    I/O at or under the objective (1.0 without objectives), and the
    highest p99 (ms; 0.0 without objectives). A trailing part window is
    left out.
    """
    objective = np.array([run.scenario.tiers[vm.tier].latency_p99_ms
                          for vm in run.scenario.vms])
    held = np.flatnonzero(objective > 0)
    per = max(1, int(round(LATENCY_WINDOW_S / run.window_s)))
    chunks = len(run.times) // per
    if not len(held) or not chunks:
        return 1.0, 0.0
    shape = (chunks, per, len(held))
    latency = run.latency_ms[:chunks * per, held].reshape(shape)
    served = run.kbs[:chunks * per, held].reshape(shape)
    busy = (latency > 0).any(axis=1)
    # a window with a latency but no bytes recorded still counts (evenly)
    share = np.where((served > 0).any(axis=1, keepdims=True), served,
                     (latency > 0).astype(float))
    p99 = mixture_p99_ms(latency, share)
    kept = (p99 <= objective[held][None, :])[busy]
    return (float(kept.mean()) if len(kept) else 1.0,
            float(p99[busy].max()) if busy.any() else 0.0)


def worst_window(x: base.FloatArray, target: base.FloatArray,
                 settle: base.BoolArray) -> float:
    """The smallest throughput / target over the judged pairs."""
    judged = _judged(target, settle)
    if not judged.any():
        return 1.0
    return float(np.min(x[judged] / target[judged]))


def unmet(x: base.FloatArray, demand: base.FloatArray) -> base.BoolArray:
    """Disks that got less than 0.95 of what they asked for."""
    result: base.BoolArray = (demand > 0) & (x < KEPT * demand)
    return result


def utilisation(x: base.FloatArray, demand: base.FloatArray,
                capacity: base.FloatArray) -> float:
    """Capacity used over the windows where some disk has unmet demand."""
    busy = unmet(x, demand).any(axis=1) & (capacity > 0)
    if not busy.any():
        return 1.0
    return float(np.mean(x[busy].sum(axis=1) / capacity[busy]))


def work_conservation(x: base.FloatArray,
                      reference: base.FloatArray) -> float:
    """Aggregate throughput with the policy / without any control."""
    total = float(reference.sum())
    return float(x.sum()) / total if total > 0 else 1.0


def time_to_restore(x: base.FloatArray, target: base.FloatArray,
                    times: base.FloatArray, window_s: float,
                    change_times: list[float]) -> float:
    """Largest time from a load change until every disk is at 0.95 x target.

    Counted to the end of the first window, after the change, in which it
    holds (later changes do not stop the clock). A change never restored
    counts until the end of the run: a lower bound of the real time.
    """
    ok = np.all((x >= KEPT * target) | (target <= 0), axis=1)
    end = float(times[-1] + window_s) if len(times) else 0.0
    worst = 0.0
    for c in change_times:
        after = np.nonzero((times + window_s > c + 1e-9) & ok)[0]
        restored = float(times[after[0]] + window_s) if len(after) else end
        worst = max(worst, restored - c)
    return worst


#: A floor is delivered in a window where the disk gets at least this
#: share of ``min(floor, demand)`` (:func:`reclaim_times`).
RECLAIMED = 0.9


def reclaim_times(x: base.FloatArray, target: base.FloatArray,
                  floor: base.FloatArray, times: base.FloatArray,
                  window_s: float, change_times: list[float]
                  ) -> base.FloatArray:
    """How long each shortfall of a floor-holder lasted, in seconds.

    A shortfall starts with a window where a disk with a floor gets less
    than :data:`RECLAIMED` x ``min(floor, demand)`` (its demand rose above
    what it gets: it woke, or a neighbour started) after one where it got
    that much or asked nothing, and lasts until the start of the first
    window where it gets that much again: the time it was short, from the
    load change inside its first window if one falls there (else from
    that window's start). No settling allowance; a shortfall still open at
    the end of the run counts until then (a lower bound). With 1 s
    windows a shortfall that lasts one window is 1 s (or less, from a
    change inside it).
    """
    short = (target > 0) & (x < RECLAIMED * target) & (
        np.broadcast_to(floor, x.shape) > 0)
    end = float(times[-1] + window_s) if len(times) else 0.0
    changes = np.array(sorted(change_times), dtype=np.float64)
    out = []
    for i in np.flatnonzero(short.any(axis=0)).tolist():
        s = short[:, i]
        starts = np.flatnonzero(s & ~np.concatenate(([False], s[:-1])))
        for k in starts.tolist():
            within = changes[(changes >= times[k] - 1e-9)
                             & (changes < times[k] + window_s - 1e-9)]
            onset = float(within[0]) if len(within) else float(times[k])
            ok = np.flatnonzero(~s[k:])
            until = float(times[k + ok[0]]) if len(ok) else end
            out.append(until - onset)
    return np.array(out, dtype=np.float64)


def compliance(x: base.FloatArray, target: base.FloatArray
               ) -> tuple[float, float]:
    """Every window of the floor-holders judged, no settling allowance.

    ``(share of (disk, window) pairs with a target at >=``
    :data:`RECLAIMED` ``x target, the smallest throughput / target)``:
    onsets, wake-ups and tier changes count. With one-second windows the
    issue's one-second compliance and worst one-second window.
    """
    every = np.zeros(len(x), dtype=bool)
    return (floor_kept(x, target, every, RECLAIMED),
            worst_window(x, target, every))


def min_max_ratio(x: base.FloatArray, demand: base.FloatArray,
                  floor: base.FloatArray, weight: base.FloatArray) -> float:
    """How evenly the spare goes to the backlogged best-effort disks.

    In each window with at least two best-effort disks (no floor) that
    are backlogged (:func:`unmet`), the smallest throughput / weight over
    the largest; the mean over those windows, 1 without any (Pisces'
    Min-Max ratio).
    """
    share = x / weight
    backlogged = unmet(x, demand) & (np.broadcast_to(floor, x.shape) <= 0)
    ratios = [float(share[k, b].min() / share[k, b].max())
              for k, b in enumerate(backlogged)
              if b.sum() >= 2 and share[k, b].max() > 0]
    return float(np.mean(ratios)) if ratios else 1.0


def _seen(action: loop.Action, times: base.FloatArray,
          window_s: float) -> int:
    """The window that ended when ``action`` was decided (the policy saw)."""
    return int(round((action.time - window_s - times[0]) / window_s))


def innocent_throttle_rate(actions: list[loop.Action], x: base.FloatArray,
                           alloc: base.FloatArray, times: base.FloatArray,
                           window_s: float) -> float:
    """Share of throttles that hit a disk at or below its oracle allocation.

    A throttle is :attr:`iotguard.sim.loop.Action.tightened`, judged on
    the window the policy saw. "At" allows the usual 5 % (up to ``oracle
    / 0.95``): the oracle's fair capacity is an estimate and one window
    varies by a few per cent with the array's noise.
    """
    caps = [a for a in actions if a.action == base.CAP and a.tightened]
    if not caps:
        return 0.0
    seen = [(_seen(a, times, window_s), a.disk) for a in caps]
    innocent = sum(1 for k, i in seen if 0 <= k < len(times)
                   and x[k, i] <= alloc[k, i] / KEPT + 1e-12)
    return innocent / len(caps)


def steady_changes(actions: list[loop.Action], disks: int,
                   times: base.FloatArray, window_s: float,
                   settle: base.BoolArray) -> base.FloatArray:
    """Changes of each disk's limits in steady state (one count a disk).

    An action is dated by the window the policy saw (:func:`_seen`).
    """
    counts = np.zeros(disks)
    for a in actions:
        k = _seen(a, times, window_s)
        if a.changed and 0 <= k < len(times) and not settle[k]:
            counts[a.disk] += 1
    return counts


def cap_churn_per_min(actions: list[loop.Action], disks: int,
                      times: base.FloatArray, window_s: float,
                      settle: base.BoolArray) -> float:
    """Changes of a disk's limits per disk per minute, in steady state."""
    steady_s = float((~settle).sum()) * window_s
    if not disks or steady_s <= 0:
        return 0.0
    changes = float(steady_changes(actions, disks, times, window_s,
                                   settle).sum())
    return changes / disks / (steady_s / 60.0)


#: The span the churn target is stated over (issue 13: at most 2 changes
#: per disk per 10 minutes).
CHURN_SPAN_S = 600.0


def cap_changes_per_10min(actions: list[loop.Action], disks: int,
                          times: base.FloatArray, window_s: float,
                          settle: base.BoolArray) -> float:
    """The most changes of any one disk's limits per 10 min, steady state.

    Unlike the mean per minute, one disk that churns is not averaged away
    by quiet ones. A run shorter than 10 minutes of steady time
    extrapolates (a single change then reads as more than one).
    """
    steady_s = float((~settle).sum()) * window_s
    if not disks or steady_s <= 0:
        return 0.0
    counts = steady_changes(actions, disks, times, window_s, settle)
    return float(counts.max()) * CHURN_SPAN_S / steady_s


def jain(values: base.FloatArray) -> float:
    """Jain's fairness index: 1 when all equal, 1/n at worst."""
    total = float(np.sum(values * values))
    if not len(values) or total <= 0:
        return 1.0
    return float(values.sum()) ** 2 / (len(values) * total)


def fairness(x: base.FloatArray, demand: base.FloatArray,
             alloc: base.FloatArray) -> float:
    """Mean over windows of Jain's index of throughput / oracle allocation.

    Over the disks with unmet demand; windows with none are skipped.
    """
    short = unmet(x, demand) & (alloc > 0)
    indices = [jain(x[k, short[k]] / alloc[k, short[k]])
               for k in range(len(x)) if short[k].any()]
    return float(np.mean(indices)) if indices else 1.0


def oracle_distance(x: base.FloatArray, alloc: base.FloatArray,
                    capacity: base.FloatArray) -> float:
    """Mean over windows of sum |throughput - oracle| / capacity."""
    valid = capacity > 0
    if not valid.any():
        return 0.0
    return float(np.mean(np.abs(x - alloc)[valid].sum(axis=1)
                         / capacity[valid]))


def quiet(demand: base.FloatArray, alloc: base.FloatArray
          ) -> base.BoolArray:
    """Disks whose whole demand fits their max-min fair share."""
    result: base.BoolArray = (demand > 0) & (alloc >= demand * (1 - 1e-6))
    return result


def quiet_ratio(x: base.FloatArray, demand: base.FloatArray,
                alloc: base.FloatArray, settle: base.BoolArray
                ) -> base.FloatArray:
    """Throughput / min(demand, fair share) of the judged quiet pairs.

    A quiet disk's target is its demand (its fair share is larger).
    """
    judged = quiet(demand, alloc) & ~settle[:, None]
    result: base.FloatArray = x[judged] / demand[judged]
    return result


def quiet_latency(latency_ms: base.FloatArray, x: base.FloatArray,
                  demand: base.FloatArray, alloc: base.FloatArray,
                  settle: base.BoolArray) -> float:
    """Mean latency (ms) of the quiet disks, weighted by their throughput.

    Over the judged windows; 0 when there is no quiet disk with I/O.
    """
    judged = quiet(demand, alloc) & ~settle[:, None] & (latency_ms > 0)
    weight = x[judged]
    if not judged.any() or weight.sum() <= 0:
        return 0.0
    return float(np.sum(latency_ms[judged] * weight) / weight.sum())


def measure(run: loop.Run, reference: loop.Run) -> dict[str, float]:
    """Every measure of ``run``; ``reference`` is the ``none`` run."""
    fair = np.array([fair_capacity(run.floor[k], run.demand[k],
                                   run.slots[k], run.weight[k],
                                   run.scenario.domain)
                     for k in range(len(run.times))])
    alloc = oracle(fair, run.floor, run.demand, run.weight)
    target = np.minimum(run.floor, run.demand)
    settle = settling(run.times, run.window_s, run.change_times)
    x = run.work
    ratio = quiet_ratio(x, run.demand, alloc, settle)
    reclaim = reclaim_times(x, target, run.floor, run.times, run.window_s,
                            run.change_times)
    kept, worst = compliance(x, target)

    burst_s, burst_floor = bursts(run, target, settle)
    kept_ms, worst_ms = latency_kept(run)

    def pct(q: float) -> float:
        return float(np.percentile(reclaim, q)) if len(reclaim) else 0.0

    return {
        'floor_kept': floor_kept(x, target, settle),
        'worst_window': worst_window(x, target, settle),
        'utilisation': utilisation(x, run.demand, run.capacity),
        'work_conservation': work_conservation(x, reference.work),
        'time_to_restore_s': time_to_restore(x, target, run.times,
                                             run.window_s, run.change_times),
        'reclaims': float(len(reclaim)),
        'reclaim_p50_s': pct(50), 'reclaim_p99_s': pct(99),
        'reclaim_max_s': pct(100),
        'compliance': kept, 'compliance_worst': worst,
        'min_max_ratio': min_max_ratio(x, run.demand, run.floor,
                                       run.weight),
        'cap_churn_per_min': cap_churn_per_min(
            run.actions, len(run.names), run.times, run.window_s, settle),
        'cap_changes_per_10min': cap_changes_per_10min(
            run.actions, len(run.names), run.times, run.window_s, settle),
        'innocent_throttle_rate': innocent_throttle_rate(
            run.actions, x, alloc, run.times, run.window_s),
        'fairness': fairness(x, run.demand, alloc),
        'oracle_distance': oracle_distance(x, alloc, fair),
        'quiet_kept': (float(np.mean(ratio >= KEPT)) if len(ratio)
                       else 1.0),
        'quiet_worst': float(ratio.min()) if len(ratio) else 1.0,
        'quiet_latency_ms': quiet_latency(run.latency_ms, x, run.demand,
                                          alloc, settle),
        'burst_s': burst_s, 'burst_floor_kept': burst_floor,
        'latency_kept': kept_ms, 'latency_p99_worst_ms': worst_ms,
    }


def vm_table(run: loop.Run) -> list[dict[str, object]]:
    """Per-VM max/min/avg KB/s over the windows (the paper's Table 2).

    ``floor_kbs``: the floor at the run's end (its last tier's).
    """
    rows: list[dict[str, object]] = []
    for i, vm in enumerate(run.scenario.vms):
        rates = [s.rate_kbs for j in vm.jobs for s in j.steps]
        demand_kbs = (float(max(r for r in rates if r is not None))
                      if rates and None not in rates else None)
        series = run.kbs[:, i]
        rows.append({'name': vm.name, 'role': vm.role,
                     'demand_kbs': demand_kbs,
                     'floor_kbs': round(float(run.floor_kbs[-1, i]), 1),
                     'avg_kbs': round(float(series.mean()), 1),
                     'min_kbs': round(float(series.min()), 1),
                     'max_kbs': round(float(series.max()), 1)})
    return rows
