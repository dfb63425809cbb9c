"""``ptxopt train``: behaviour cloning, then GRPO (the learning layer, :mod:`rl`).

Added to the ``ptxopt`` command line by :mod:`rl.plugin` (ptxopt never
imports :mod:`rl`). torch is imported only inside the command, so the rest
of the CLI works without the ``rl`` extra.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


from ptxopt.cli.executor_option import executor_option
from ptxopt.cli.common import (FiniteFloat, allow_unchecked_option, arch_option, backend_option,
                               cache_option, check_arch, check_backend, emit_json, json_options, json_target,
                               objective_option, output_dir, prepare_cache, stdin_once)
from ptxopt.cli.common import fail as _fail
from ptxopt.cli.output_rule import writes

_POSITIVE = FiniteFloat(0, min_open=True)  # learning rates, clip ranges, sampling temperatures
_NON_NEGATIVE = FiniteFloat(0)


@click.command("train")
@click.option("--bc-only", is_flag=True, help="Behaviour cloning only (seconds).")
@click.option("--quick", is_flag=True, help="BC, then 3 GRPO epochs (G=4) on 2 small kernels (under a minute).")
@click.option("--eval", "do_eval", is_flag=True,
              help="Evaluate --checkpoint against greedy and random search at equal budgets.")
@click.option("--checkpoint", default=None, type=click.Path(dir_okay=False),
              help="Policy to evaluate (--eval), or to start GRPO from instead of BC (then also its KL reference).")
@click.option("--kernels", default="gemm_tile", show_default=True,
              help="Training kernels for GRPO / evaluation kernels for --eval (corpus selector).")
@click.option("--families", default=None, help="Only these families' trajectories for BC (comma-separated).")
@click.option("--trajectories", "trajectories", multiple=True,
              type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="Greedy trajectory files for BC (repeatable; '-': stdin) [default: the committed "
                   "corpus/trajectories].")
@click.option("--out", "out_dir", default="runs/train", show_default=True, type=click.Path(file_okay=False),
              callback=output_dir(create=False), help="Where checkpoints, logs and plots go.")
@click.option("--loko", is_flag=True, help="Also report leave-one-kernel-out BC accuracy vs a random forest.")
@click.option("--bc-epochs", default=300, show_default=True, type=click.IntRange(1))
@click.option("--label-temperature", default=0.0, show_default=True, type=_NON_NEGATIVE,
              help="BC targets: 0 = greedy's choices; >0 = softmax of every measured action's reward / T.")
@click.option("--epochs", default=20, show_default=True, type=click.IntRange(1), help="GRPO epochs.")
@click.option("--group-size", default=8, show_default=True, type=click.IntRange(2), help="GRPO group size G.")
@click.option("--batch-kernels", default=0, show_default=True, type=click.IntRange(0),
              help="Kernels per GRPO epoch (0: all).")
@click.option("--lr", default=3e-4, show_default=True, type=_POSITIVE, help="GRPO learning rate (> 0).")
@click.option("--clip-eps", default=0.2, show_default=True, type=_POSITIVE, help="GRPO ratio clip range (> 0).")
@click.option("--kl-beta", default=0.01, show_default=True, type=_NON_NEGATIVE,
              help="Weight of the KL penalty to the BC policy (>= 0).")
@click.option("--explore-temperature", default=1.5, show_default=True, type=_POSITIVE,
              help="Sampling temperature of GRPO's exploring rollouts (> 0).")
@click.option("--exploit-temperature", default=0.5, show_default=True, type=_POSITIVE,
              help="Sampling temperature of GRPO's exploiting rollouts (> 0).")
@click.option("--samples", default=8, show_default=True, type=click.IntRange(1), help="--eval: best of K sampled.")
@click.option("--seed", default=0, show_default=True)
@click.option("-j", "--workers", default=0, show_default=True, type=click.IntRange(0, 256),
              help="GRPO groups rolled out in parallel worker processes (0: in this process; with "
                   "--executor ray: tasks in flight, 0 = every CPU of the cluster).")
@executor_option
@backend_option
@arch_option
@allow_unchecked_option
@cache_option
@objective_option
@json_options(legacy_path=True, what="the summary (--eval: the comparison; else train.json's content)")
@writes({"json_out": "--json-out", "as_json": "--json", "out_dir": "--out"}, ("trajectories", "checkpoint"),
        folder_files={"out_dir": lambda kw: () if kw.get("do_eval") else
                      ("bc.pt", "policy.pt", "grpo_log.csv", "grpo_curves.png", "train.json")})
def train_cmd(bc_only, quick, do_eval, checkpoint, kernels, families, trajectories, out_dir, loko, bc_epochs,
              label_temperature,
              epochs, group_size, batch_kernels, lr, clip_eps, kl_beta, explore_temperature, exploit_temperature,
              samples, seed, workers, executor, backend, arch, allow_unchecked, cache_path, objective, json_out, as_json=None,
              l2="cold"):
    """Train the pass-selection policy: BC on greedy trajectories, then GRPO.

    Cycles are the sim model's ESTIMATE unless --backend gpu. Outputs go to
    --out: bc.pt, policy.pt, grpo_log.csv, grpo_curves.png, train.json.
    Ctrl-C during GRPO writes the last finished epoch's policy, the curves
    and train.json (interrupted, epochs_done), and exits 130. With --json the
    progress lines go to stderr and stdout holds only the JSON summary.
    """
    as_json, json_out = json_target(as_json, json_out)
    say = _to_stderr if as_json else click.echo  # stdout holds only the JSON
    try:
        from .checkpoint import CheckpointError, load_policy
        from .grpo import GRPOConfig
        from .train import DEFAULT_TRAJECTORIES, QUICK_KERNELS, run_bc, run_grpo, write_summary
    except ImportError as e:
        _fail(f"training needs the learning layer (pip install 'ptxopt[rl]'): {e}")
    from ptxopt.kernels.corpus import CorpusError, select
    from ptxopt.evaluate import default_cache_path
    from ptxopt.search import EvalOptions

    # everything that can be refused is refused here, before behaviour cloning or any evaluation
    if sum([bc_only, quick, do_eval]) > 1:
        _fail("choose one of --bc-only, --quick, --eval")
    stdin_once(*trajectories)
    check_backend(backend)
    check_arch(arch)
    cache = cache_path or str(default_cache_path())
    options = EvalOptions(arch=arch, backend=backend, cache=cache, allow_unchecked=allow_unchecked,
                          objective=objective, l2=l2)
    if do_eval and not checkpoint:
        _fail("--eval needs --checkpoint PATH")
    try:
        if checkpoint and not bc_only:
            load_policy(checkpoint)
        specs = select(kernels.removeprefix("corpus:")) if do_eval or not (bc_only or quick) else []
    except (CheckpointError, CorpusError) as e:
        _fail(str(e))
    if not bc_only:
        prepare_cache(cache, None)  # an unusable cache: one line, exit 2, before any training

    if do_eval:
        from ptxopt.evaluate import Candidate
        from .protocol import compare

        result = compare(checkpoint, [(Candidate.from_corpus(s), s.family) for s in specs], options,
                         samples=samples, seed=seed,
                         progress=lambda i, n, k: click.echo(f"[{i}/{n}] {k}", err=True))
        emit_json(result, as_json, json_out)
        if not as_json:
            print_comparison(result)
        return

    trajs = list(trajectories) or [DEFAULT_TRAJECTORIES]
    for t in trajs:
        if t != "-" and not Path(t).exists():
            _fail(f"{t}: no trajectory file (record one with: ptxopt search gemm_tile --record {t})")
    fams = [f.strip() for f in families.split(",")] if families else None
    doc: dict = {"mode": "bc-only" if bc_only else "quick" if quick else "full", "trajectories": [str(t) for t in trajs],
                 "families": fams}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from ptxopt.support.outputs import StreamLock

    # two live runs into one --out would mix their grpo_log.csv: the second is refused, before any work
    click.get_current_context().call_on_close(StreamLock(out / "grpo_log.csv").release)
    if checkpoint and not bc_only:
        bc_path = Path(checkpoint)
    else:
        try:
            bc_path, doc["bc"] = run_bc(trajs, out, families=fams, epochs=bc_epochs, seed=seed, loko=loko,
                                        label_temperature=label_temperature, log=say)
        except ValueError as e:  # unreadable trajectories (FILE:LINE), none that match
            _fail(str(e))
    say(f"BC checkpoint: {bc_path}")
    if bc_only:
        write_summary(out, doc)
        _emit_summary(doc, as_json, json_out)
        return
    hyper = dict(lr=lr, clip_eps=clip_eps, kl_beta=kl_beta, explore_temperature=explore_temperature,
                 exploit_temperature=exploit_temperature, seed=seed)
    if quick:
        train_kernels = list(QUICK_KERNELS)
        cfg = GRPOConfig(epochs=3, group_size=4, checkpoint_every=0, **hyper)
    else:
        train_kernels = [s.id for s in specs]
        cfg = GRPOConfig(epochs=epochs, group_size=group_size, batch_kernels=batch_kernels, **hyper)
    say(f"GRPO on {len(train_kernels)} kernels, {cfg.epochs} epochs, G={cfg.group_size} "
               f"({backend} backend; cycles are {'an ESTIMATE' if options.estimate else 'MEASURED'})")
    from .grpo import TrainingInterrupted, shielded

    try:
        path, rows = run_grpo(bc_path, train_kernels, out, cfg, options, log=say, executor=executor,
                              workers=workers)
    except TrainingInterrupted as e:  # the finished epochs' policy and curves are written: add the summary
        with shielded():
            doc.update(grpo_kernels=train_kernels, grpo=e.rows, epochs=cfg.epochs, epochs_done=e.epochs_done,
                       interrupted=True)
            write_summary(out, doc)
            _emit_summary(doc, as_json, json_out)
        kept = f"policy of epoch {e.epochs_done}: {e.path}" if e.path else f"no GRPO epoch finished; BC: {bc_path}"
        from ptxopt.cli import termination

        click.echo(f"ptxopt: {termination.word()} after {e.epochs_done}/{cfg.epochs} GRPO epochs; {kept}, summary: "
                   f"{out / 'train.json'}", err=True)
        sys.exit(termination.interrupted_code())
    doc.update(grpo_kernels=train_kernels, grpo=rows, epochs=cfg.epochs, epochs_done=cfg.epochs, interrupted=False)
    write_summary(out, doc)
    _emit_summary(doc, as_json, json_out)
    say(f"policy: {path}  log: {out / 'grpo_log.csv'}  curves: {out / 'grpo_curves.png'}")


def _to_stderr(*args, **kw) -> None:
    click.echo(*args, **{**kw, "err": True})


def _emit_summary(doc: dict, as_json: bool, json_out: str | None) -> None:
    """train.json's document by the --json/--json-out convention (paths and the like as strings, as there)."""
    if as_json or json_out:
        emit_json(json.loads(json.dumps(doc, default=str)), as_json, json_out)


def print_comparison(result: dict) -> None:
    s = result["summary"]
    click.echo(f"{'method':<16}{'mean impr %':>12}{'median %':>10}{'evals/kernel':>14}")
    for name, v in s.items():
        if name == "targets":
            continue
        click.echo(f"{name:<16}{v['mean_improvement_pct']:>12.2f}{v['median_improvement_pct']:>10.2f}"
                   f"{v['mean_evaluations']:>14.1f}")
    t = s.get("targets")
    if t:
        click.echo(f"best-of-{result['samples']} / greedy: improvement {t['best_of_k_vs_greedy_improvement']:.2f}x "
                   f"(target >= 1.00) with {t['best_of_k_vs_greedy_evaluations']:.2f}x the evaluations (target <= 0.50)")
        click.echo(f"greedy-decoded / greedy improvement: {t['greedy_decoded_vs_greedy_improvement']:.2f} (target >= 0.90)")
        click.echo(f"best-of-{result['samples']} beats random at equal budget: {t['best_of_k_beats_random_at_equal_budget']}")
    click.echo("(cycles are the sim model's ESTIMATE unless measured with --backend gpu)")
