"""The policy: an MLP from the observation to one logit per action
(:data:`ptxopt.search.actions.ACTIONS`), masked.

Input scaling is fixed, not fitted: ``sign(x) * log1p(|x|)`` per feature, so
a kernel of 50 instructions and one of 5,000 land in the same range and a
model trained on one family sees others without a stored normaliser to go
stale. Masked actions get a logit of -inf before any softmax, so they have
probability 0 in sampling, in the cross-entropy and in KL terms.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from ptxopt.search.actions import N_ACTIONS

# The networks here are tiny (a few 10k weights, batches of a few hundred
# rows): intra-op threads buy nothing and, on a loaded machine, spin. One
# thread measured 0.11 s against 31.6 s for 150 BC epochs on a busy 2-core
# box. PTXOPT_TORCH_THREADS overrides.
torch.set_num_threads(int(os.environ.get("PTXOPT_TORCH_THREADS", "1")))

NEG_INF = -1e9  # finite: keeps log-softmax and KL free of NaN where everything else is masked


@dataclass
class PolicyConfig:
    obs_dim: int
    n_actions: int = N_ACTIONS
    hidden: int = 128
    layers: int = 2
    dropout: float = 0.1

    def to_json(self) -> dict:
        return asdict(self)


def scale(obs) -> torch.Tensor:
    x = torch.as_tensor(np.asarray(obs), dtype=torch.float32)
    return torch.sign(x) * torch.log1p(x.abs())


class Policy(nn.Module):
    def __init__(self, config: PolicyConfig):
        super().__init__()
        self.config = config
        dims = [config.obs_dim] + [config.hidden] * config.layers
        body = []
        for a, b in zip(dims, dims[1:]):
            body += [nn.Linear(a, b), nn.LayerNorm(b), nn.GELU(), nn.Dropout(config.dropout)]
        self.body = nn.Sequential(*body)
        self.head = nn.Linear(dims[-1], config.n_actions)

    def forward(self, obs, mask) -> torch.Tensor:
        """Masked logits, shape (batch, n_actions)."""
        logits = self.head(self.body(scale(obs)))
        m = torch.as_tensor(np.asarray(mask), dtype=torch.bool)
        return logits.masked_fill(~m, NEG_INF)

    def log_probs(self, obs, mask, temperature: float = 1.0) -> torch.Tensor:
        return torch.log_softmax(self.forward(obs, mask) / temperature, dim=-1)

    @torch.no_grad()
    def act(self, obs, mask, *, temperature: float = 1.0, greedy: bool = False,
            generator: torch.Generator | None = None) -> tuple[int, float]:
        """One action for one observation: (index, log-probability at ``temperature``)."""
        was = self.training
        self.eval()
        try:
            lp = self.log_probs(np.asarray(obs)[None], np.asarray(mask)[None], temperature)[0]
        finally:
            self.train(was)
        if greedy:
            a = int(torch.argmax(lp))
        else:
            a = int(torch.multinomial(lp.exp(), 1, generator=generator))
        return a, float(lp[a])
