"""The tuning engine: the policy a candidate's life follows, whichever front end brought it.

Between measuring (`_measure`) and the front ends (`pyhipbench.triton`'s
autotune, sweeps, `pyhipbench.tune`): racing's bound (racing.py), the tie
round under sustained load (ties.py), the ranking (ranking.py), a candidate
on its way (trial.py) and the engine that runs a list of them through these
(engine.py); `tune()` (tune.py, contenders.py, tuning.py) is its front end
for launches, chains and callables. It imports no other front end.
"""
