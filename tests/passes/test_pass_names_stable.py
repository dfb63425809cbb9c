"""What parametric passes must not change: pinned at the commit before them.

Passes became parametric (``maxnreg{n=128}``) with today's names as
aliases that print canonically, so every string a user, a cache or a
committed artefact has seen stays the same. These values were computed
once at that commit; a change here means warm caches go cold, committed
trajectories and the policy stop loading, or golden output moves.
"""

import hashlib
import json

import numpy as np
import pytest

from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline, PipelineError

NAMES = ["vec_ld", "vec_st", "split_ld", "cache_ca", "cache_cg", "cache_cs", "cache_cv",
         "st_cache_wb", "st_cache_wt", "st_cache_cs", "maxnreg_32", "maxnreg_64", "maxnreg_128",
         "maxnreg_255", "reorder_cp", "reorder_il", "reorder_lf", "reorder_sl", "prefetch_L1", "prefetch_L2"]


def test_pipeline_cache_key_is_unchanged(monkeypatch):
    """The evaluation cache's pipeline key (code and tool versions held
    fixed: those change with any edit by design)."""
    from ptxopt.equivalence.launch import from_spec
    from ptxopt.evaluate import keys

    monkeypatch.setattr(keys, "code_digests", lambda: {"front": "F", "evaluator": "E"})
    monkeypatch.setattr(keys, "fingerprint", lambda s: {"fixed": 1})
    spec = get("gemm_tile_4x4x4")
    key = keys.pipeline_key(spec.ptx_text(), str(Pipeline.parse("vec_ld,maxnreg_128")), spec.entry,
                            keys.launch_id(from_spec(spec)), None)
    # the launch enters the key as Launch.key() (role, origin, grid, block, shared bytes, scalars,
    # buffers), so two launches of one kernel never share an entry; the key changes only on purpose
    assert key == "24743697fd7bf7adcb884b203fe42c5ac778df5bd13f424d54f41bf756b29cee"


def test_outputs_and_reports_of_every_named_pass_are_unchanged():
    h = hashlib.sha256()
    for k in ("gemm_tile_4x4x4", "cuda_layernorm_row", "cuda_matmul_tiled_smem"):
        m = parse(get(k).ptx_text())
        for p in NAMES + ["vec_ld,maxnreg_128", "maxnreg_64{override=1},cache_cg,reorder_cp,prefetch_L1",
                          "vec_st{assume_align=16},st_cache_wt,reorder_sl"]:
            res = PassManager(p).run(m)
            h.update(emit(res.module).encode())
            doc = res.to_json()
            for r in doc["passes"]:
                r.pop("seconds")
            h.update(json.dumps(doc, sort_keys=True, default=str).encode())
    assert h.hexdigest() == "c8e80122d11b0dc94ff473f311bea4b58511e7260c3a6372bf1098f6608786f7"


@pytest.mark.parametrize("text,msg", [
    ("cache_cg,cache_ca", "conflicting passes: 'cache_cg' and 'cache_ca' are both in the load-cache-hint "
                          "family (at most one per pipeline)"),
    ("maxnreg_32,vec_ld,maxnreg_255", "conflicting passes: 'maxnreg_32' and 'maxnreg_255' are both in the "
                                      "register-budget family (at most one per pipeline)"),
    ("split_ld,vec_ld", "conflicting passes: 'split_ld' conflicts with 'vec_ld': vec_ld and split_ld undo each other"),
    ("vec_ld{x=1}", "pass 'vec_ld' has no option 'x' (options: assume_align)"),
    ("vec_ld{assume_align=q}", "pass 'vec_ld': option assume_align='q' is not a valid int"),
])
def test_error_messages_are_unchanged(text, msg):
    with pytest.raises(PipelineError) as e:
        Pipeline.parse(text)
    assert str(e.value) == msg


def test_canonical_strings_are_unchanged():
    for n in NAMES:
        assert str(Pipeline.parse(n)) == n
    assert str(Pipeline.parse("maxnreg_128{override=1},vec_ld{assume_align=16}")) == \
        "maxnreg_128{override=True},vec_ld{assume_align=16}"


def test_committed_policy_and_trajectories_give_the_same_results():
    pytest.importorskip("torch")
    from ptxopt.evaluate import Candidate
    from ptxopt.search import State
    from ptxopt.search.trajectory import read_jsonl
    from ptxopt.triton.choose import PolicyPipelines

    pp = PolicyPipelines("corpus/policies/gemm_elementwise_sm_89.pt")
    got = {}
    for k in ("gemm_tile_4x4x4", "gemm_tile_8x8x8", "cuda_layernorm_row", "cuda_gelu_tanh"):
        spec = get(k)
        pl, _why = pp.choose(spec.entry, spec.ptx_text())
        got[k] = str(pl) if pl else None
    assert got == {"gemm_tile_4x4x4": "vec_ld,vec_st,maxnreg_64",
                   "gemm_tile_8x8x8": "vec_ld,vec_st,maxnreg_255",
                   "cuda_layernorm_row": None, "cuda_gelu_tanh": "prefetch_L1"}
    steps = list(read_jsonl("corpus/trajectories/greedy_sm_89.jsonl"))
    obs = np.array([s.observation for s in steps])
    mask = np.array([s.action_mask for s in steps], bool)
    lp = pp.policy.log_probs(obs, mask)
    # (steps, sum of the policy's argmax, sum of the recorded actions): re-recorded only on purpose, when an
    # action is appended before stop or what a pass or the sim model does changes (e.g. the runtime/guarded
    # unroll, launch_bounds on nvcc kernels, the sim's register-bank model with register_read_window=3)
    # two actions appended before stop (loop_version, widths 2 and 4), stop 26 -> 28: the recorded masks are
    # widened (trajectory.widen_mask), the policy picks what it picked (argmax +2 on each of its 109 stops, the
    # recorded actions +2 on each of the 110 stop steps); was (319, 3882, 4011)
    # two more (swp_ld, distances 1 and 2), stop 28 -> 30: again +2 on each stop; was (319, 4100, 4231)
    assert (len(steps), int(lp.argmax(1).sum()), sum(s.action_index for s in steps)) == (319, 4318, 4451)
    root = State.root(Candidate.from_corpus("gemm_tile_4x4x4"))
    # the observation may grow (actions appended before stop, family slots added), but the slots the
    # committed policy was trained on must still hold exactly what they held
    import torch

    from ptxopt.search import observation_names

    old_names = torch.load("corpus/policies/gemm_elementwise_sm_89.pt", weights_only=True)["observation_names"]
    obs, names = np.asarray(root.observation()), observation_names()
    assert hashlib.sha256(obs[[names.index(n) for n in old_names]].tobytes()).hexdigest()[:16] == "69454555d55cf7f5"
    assert hashlib.sha256(obs.tobytes()).hexdigest()[:16] == "f13e7400500df341"
    assert root.action_mask().astype(int).tolist() == [1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1,
                                                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # loop actions: no loop
