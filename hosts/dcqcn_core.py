"""DCQCN as pure state machines: no sockets, no clock reads.  Time is float
seconds passed in by the caller (the transport passes time.monotonic(), the
tests a virtual clock); rates are bit/s.

DcqcnParams holds one parameter set; ReactionPoint (the sender) follows the
"Mellanox" mode of the HPCC ns-3 code, which Astra-Sim's ns-3 backend uses
too, so runs compare with those simulators; NotificationPoint (the receiver)
asks for at most one CNP per flow per interval; FixedRate stands in for the
reaction point with DCQCN off.  The presets are hosts.dcqcn's; docs/hosts.md
states the rules.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

INF = math.inf

# The rate, target and alpha a ReactionPoint reports as a change: Rc and Rt
# on any change; alpha only once it moved by this much since the last report,
# so that a decaying alpha does not produce an event every alpha period.
ALPHA_REPORT_STEP = 0.01
# Rc converges geometrically on Rt; closer than this (bit/s) counts as equal.
RATE_EPSILON_BPS = 1.0


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN parameters.  Rates in bit/s, periods in seconds."""

    line_rate_bps: float
    min_rate_bps: float
    g: float
    rate_on_first_cnp: float
    alpha_period_s: float
    decrease_period_s: float
    increase_period_s: float
    byte_counter_bytes: int | None   # None: no byte counter (as in HPCC's code)
    fast_recovery_steps: int          # F
    r_ai_bps: float
    r_hai_bps: float
    cnp_interval_s: float
    clamp_target_rate: bool = False   # rdma-hw.cc ClampTargetRate (default false)

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"dcqcn parameter '{name}' {why}, got {getattr(self, name)!r}")

        for name in ("line_rate_bps", "min_rate_bps", "alpha_period_s",
                     "decrease_period_s", "increase_period_s"):
            value = getattr(self, name)
            if not is_number(value) or value <= 0:
                raise bad(name, "must be a positive finite number")
        for name in ("r_ai_bps", "r_hai_bps", "cnp_interval_s"):
            value = getattr(self, name)
            if not is_number(value) or value < 0:
                raise bad(name, "must be a finite number >= 0")
        if self.min_rate_bps > self.line_rate_bps:
            raise bad("min_rate_bps", f"must not exceed line_rate_bps ({self.line_rate_bps})")
        for name in ("r_ai_bps", "r_hai_bps"):
            if getattr(self, name) > self.line_rate_bps:
                raise bad(name, f"must not exceed line_rate_bps ({self.line_rate_bps})")
        if not is_number(self.g) or not 0 < self.g <= 1:
            raise bad("g", "must be in (0, 1]")
        if not is_number(self.rate_on_first_cnp) or not 0 < self.rate_on_first_cnp <= 1:
            raise bad("rate_on_first_cnp", "must be in (0, 1]")
        if (not isinstance(self.fast_recovery_steps, int) or isinstance(self.fast_recovery_steps, bool)
                or self.fast_recovery_steps < 0):
            raise bad("fast_recovery_steps", "must be an integer >= 0")
        bc = self.byte_counter_bytes
        if bc is not None and (not isinstance(bc, int) or isinstance(bc, bool) or bc <= 0):
            raise bad("byte_counter_bytes", "must be a positive integer or None (off)")
        if not isinstance(self.clamp_target_rate, bool):
            raise bad("clamp_target_rate", "must be true or false")




# --- reaction point ----------------------------------------------------------

class ReactionPoint:
    """Sender-side DCQCN state of one flow.

    Every method takes ``now`` and first runs the timers due up to it; the
    state is exact whenever a method returns, however late it is called.
    Methods return True when Rc or Rt changed, or alpha moved by at least
    ALPHA_REPORT_STEP since the last time they returned True.
    """

    def __init__(self, params: DcqcnParams, now: float):
        self.params = params
        self.rate_bps = params.line_rate_bps      # Rc
        self.target_bps = params.line_rate_bps    # Rt
        self.alpha = 1.0
        self.cnps = 0
        self.decreases = 0
        self.increases = 0
        self.late_calls = 0      # calls with a time before an earlier call's
        self._first_cnp = True
        self._alpha_cnp = False
        self._decrease_cnp = False
        self._t_alpha = INF
        self._t_dec = INF
        self._t_inc = INF
        self._stage = 0          # timer events since the last decrease
        self._byte_stage = 0     # byte-counter events since the last decrease
        self._bytes = 0
        self._now = now
        self._reported = (self.rate_bps, self.target_bps, self.alpha)

    # -- inputs ---------------------------------------------------------------

    def on_cnp(self, now: float) -> bool:
        self._run_timers(now)
        self.cnps += 1
        self._alpha_cnp = True
        self._decrease_cnp = True
        if self._first_cnp:
            self._first_cnp = False
            self.alpha = 1.0
            self._alpha_cnp = False
            self._t_alpha = now + self.params.alpha_period_s
            self._t_dec = now + self.params.decrease_period_s
            self.rate_bps = self.target_bps = self.params.rate_on_first_cnp * self.rate_bps
        return self._report()

    def advance(self, now: float) -> bool:
        self._run_timers(now)
        return self._report()

    def on_bytes_sent(self, n: int, now: float) -> bool:
        self._run_timers(now)
        bc = self.params.byte_counter_bytes
        if bc is not None and self._t_inc < INF:   # counting starts at the first decrease
            self._bytes += n
            while self._bytes >= bc:
                self._bytes -= bc
                self._increase(by_timer=False)
        return self._report()

    def next_event_time(self) -> float:
        """When the state may next change in a way the caller must see (the
        pacing rate, or a reportable alpha); INF when nothing is pending.
        Timers that would change nothing visible are caught up lazily."""
        if self._decrease_cnp or self._alpha_cnp or not self._converged():
            return min(self._t_alpha, self._t_dec, self._t_inc)
        # alpha only decays from here: it can still move a reportable step
        # while it is that far from the reported value, or that far above 0
        reported = self._reported[2]
        if max(reported, abs(self.alpha - reported)) >= ALPHA_REPORT_STEP:
            return self._t_alpha
        return INF

    def state(self) -> dict[str, float]:
        return {"rc": self.rate_bps, "rt": self.target_bps, "alpha": self.alpha}

    # -- timers -----------------------------------------------------------------

    def _converged(self) -> bool:
        line = self.params.line_rate_bps
        return self.rate_bps == line and self.target_bps == line

    def _run_timers(self, now: float) -> None:
        if now < self._now:
            # a caller that sampled its clock before an earlier call: treat as
            # no time passed rather than fail the transport
            self.late_calls += 1
            now = self._now
        self._now = now
        p = self.params
        # While a CNP flag is up, events interact: run them one by one, in
        # time order (alpha before decrease at a tie, as rdma-hw.cc's +1 ns).
        while self._alpha_cnp or self._decrease_cnp:
            t = min(self._t_alpha, self._t_dec, self._t_inc)
            if t > now:
                return
            if self._t_alpha == t:
                self._alpha_timer()
            elif self._t_dec == t:
                self._decrease_timer()
            else:
                self._t_inc += p.increase_period_s
                self._increase(by_timer=True)
        # Flags down: decrease checks are no-ops and alpha decays on its own,
        # so both catch up in closed form; increases run until Rc and Rt
        # stop changing, then only the stage count moves.
        if self._t_alpha <= now:
            k = math.floor((now - self._t_alpha) / p.alpha_period_s) + 1
            self.alpha *= (1 - p.g) ** k
            self._t_alpha += k * p.alpha_period_s
        if self._t_dec <= now:
            k = math.floor((now - self._t_dec) / p.decrease_period_s) + 1
            self._t_dec += k * p.decrease_period_s
        while self._t_inc <= now and not self._converged():
            self._t_inc += p.increase_period_s
            self._increase(by_timer=True)
        if self._t_inc <= now:
            k = math.floor((now - self._t_inc) / p.increase_period_s) + 1
            self._stage += k
            self.increases += k
            self._t_inc += k * p.increase_period_s

    def _alpha_timer(self) -> None:
        g = self.params.g
        self.alpha = (1 - g) * self.alpha + (g if self._alpha_cnp else 0.0)
        self._alpha_cnp = False
        self._t_alpha += self.params.alpha_period_s

    def _decrease_timer(self) -> None:
        p = self.params
        t = self._t_dec
        self._t_dec += p.decrease_period_s
        if not self._decrease_cnp:
            return
        self._decrease_cnp = False
        if p.clamp_target_rate or self._stage or self._byte_stage:
            self.target_bps = self.rate_bps
        self.rate_bps = max(p.min_rate_bps, self.rate_bps * (1 - self.alpha / 2))
        self._stage = self._byte_stage = self._bytes = 0
        self._t_inc = t + p.increase_period_s
        self.decreases += 1

    def _increase(self, by_timer: bool) -> None:
        p = self.params
        f = p.fast_recovery_steps
        if p.byte_counter_bytes is None:
            low = high = self._stage
        else:
            low, high = sorted((self._stage, self._byte_stage))
        if high < f:
            pass                                    # fast recovery
        elif low > f:
            self.target_bps = min(p.line_rate_bps, self.target_bps + p.r_hai_bps)
        else:
            self.target_bps = min(p.line_rate_bps, self.target_bps + p.r_ai_bps)
        self.rate_bps = (self.rate_bps + self.target_bps) / 2
        if abs(self.target_bps - self.rate_bps) < RATE_EPSILON_BPS:
            self.rate_bps = self.target_bps
        if by_timer:
            self._stage += 1
        else:
            self._byte_stage += 1
        self.increases += 1

    def _report(self) -> bool:
        rc, rt, alpha = self._reported
        if (self.rate_bps != rc or self.target_bps != rt
                or abs(self.alpha - alpha) >= ALPHA_REPORT_STEP
                or (self.alpha != alpha and self.alpha in (0.0, 1.0))):
            self._reported = (self.rate_bps, self.target_bps, self.alpha)
            return True
        return False


class FixedRate:
    """The reaction point with DCQCN off: paces at a fixed rate (None: no
    pacing, the window alone limits the sender) and ignores CNPs.  The
    interface of ReactionPoint."""

    def __init__(self, rate_bps: float | None):
        self.rate_bps = rate_bps
        self.target_bps = rate_bps
        self.alpha = 0.0

    def on_cnp(self, now: float) -> bool:
        return False

    def advance(self, now: float) -> bool:
        return False

    def on_bytes_sent(self, n: int, now: float) -> bool:
        return False

    def next_event_time(self) -> float:
        return INF


# --- notification point --------------------------------------------------------

class NotificationPoint:
    """Receiver-side CNP generation: at most one CNP per flow per interval.
    Interval None (DCQCN off): packets and marks are counted, no CNP is asked for."""

    def __init__(self, cnp_interval_s: float | None):
        if cnp_interval_s is not None and (not is_number(cnp_interval_s) or cnp_interval_s < 0):
            raise ValueError(f"dcqcn parameter 'cnp_interval_s' must be a finite number >= 0, "
                             f"got {cnp_interval_s!r}")
        self.cnp_interval_s = None if cnp_interval_s is None else float(cnp_interval_s)
        self._last_cnp: dict[Hashable, float] = {}
        self.packets: dict[Hashable, int] = {}
        self.ce_packets: dict[Hashable, int] = {}
        self.cnps: dict[Hashable, int] = {}

    def on_data(self, flow_key: Hashable, ce: bool, now: float) -> bool:
        """Account one data packet; True: send a CNP to that flow's sender now."""
        self.packets[flow_key] = self.packets.get(flow_key, 0) + 1
        if not ce:
            return False
        self.ce_packets[flow_key] = self.ce_packets.get(flow_key, 0) + 1
        if self.cnp_interval_s is None:
            return False
        last = self._last_cnp.get(flow_key)
        if last is not None and now - last < self.cnp_interval_s:
            return False
        self._last_cnp[flow_key] = now
        self.cnps[flow_key] = self.cnps.get(flow_key, 0) + 1
        return True
