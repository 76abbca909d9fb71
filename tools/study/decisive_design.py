"""How wide would the study's interval be with more test sentences and more seeds? (the decisive design)

    python tools/study/decisive_design.py [--archive reports/evidence_jaen_inxl_identity] [--json FILE]

Reads the study's archived test translations (``ARCHIVE/jobs/{baseline,combination}_s{1,2,3}/hyp.test.gz``; by
default the runs that sized the design, whose Combination started InXL from identity) and
the test references (``../shared/data/enja/dev.en``, the study's ``data/test.ref``), and projects the expected
95 % half-width of Δ test BLEU (Combination − baseline) as the report computes it
(:func:`onmt_xl.experiments.stats.seed_pooled_bootstrap`: corpus BLEU from summed sacrebleu statistics, each
system's mean over its seed runs, sentences resampled paired, seed runs resampled per system) for ``n`` test
sentences and ``k`` seeds per system. Everything is sacrebleu's BLEU on summed per-sentence statistics; every
draw comes from a fixed seed, so the table reproduces exactly. It takes a few seconds.

The variance of the report's Δ has two parts, estimated apart:

* **sentences** (which sentences the test split holds): resample ``n`` sentences with replacement from the 500,
  the 3 seed runs of each system fixed, and take the variance of Δ over ``--draws`` draws (``V_S3(n)``, the
  actual statistic, not a linearisation). Its dependence on ``k`` comes from the runs' per-sentence influences
  (jackknife, ``(N−1)·(BLEU − BLEU without sentence i)``): per sentence, the influence difference of the two
  systems' seed means is a part common to the seeds (``V_common``, the systems' own difference) and a
  seed×sentence part (``σ²_ε`` per system, the spread of one sentence's influence over seed runs) that
  averages away over seeds: ``n·Var = V_common + (σ²_ε,B + σ²_ε,C)·c(k)``, with ``c(k) = 1/k`` for k fixed runs
  and ``c(k) = (2k−1)/k²`` for the report's bootstrap, which draws the k runs with replacement (fewer distinct
  runs per replicate);
* **seeds** (which seeds trained the models): the report's bootstrap adds ``(k−1)/k² · (s²_B + s²_C)``, ``s²``
  being the between-seed variance of a system's corpus BLEU on the test split. On 500 sentences ``s²`` is
  partly seed×sentence noise, which shrinks as ``1/n``, and partly a seed's overall model quality ``σ²_a``,
  which does not. ``σ²_a`` is estimated by the covariance over seeds of BLEU on two random halves of the test
  split (independent sentence noise; averaged over ``--splits`` random halvings), and by ``s² − σ²_ε/N``.
  Scenario **shrinks** (the estimate, floored at 0): ``s²(n) = σ²_a + (s² − σ²_a)·N/n``. Scenario **stays**
  (pessimistic): ``s²(n) = s²``, as if every seed difference seen on the 500 sentences were model quality.

Assumptions: new test pairs are drawn from the same distribution as the 500 (the carved ones come from the
same corpus: same lengths, the same share of references found verbatim among the training targets); the
models trained on the reduced training split vary as the study's did; the seed×sentence part is independent
over sentences (so ``1/n``). The report's bootstrap counts the seed×sentence noise twice (once in the
sentence resampling, once in the seed resampling), so its interval is wider than the sampling sd of Δ, which
the "calibrated" column gives: ``(V_common + (σ²_ε,B + σ²_ε,C)/k)/n + 2σ²_a/k``. A check (printed first)
runs the report's bootstrap itself on the archive with k = 1, 2, 3 of the seed runs (every choice of them)
against the projection at n = 500.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from onmt_xl.experiments.stats import bleu_from_statistics, bleu_statistics, seed_pooled_bootstrap  # noqa: E402
from onmt_xl.experiments.stock import read_lines  # noqa: E402

Z = 1.959963984540054  # the normal 97.5 % quantile: half-width ≈ Z · sd of the bootstrap distribution
SEC_PER_JOB_CPU_H = 1.6  # one 8,000-step job on this CPU with 2 jobs at once (reports/EVIDENCE.md)
GPU_WAVE = 16  # jobs in one GPU wave (tools/study/gpu_evidence.sh), about 10 minutes on an H200


def corpus_bleu(stats: np.ndarray, weights: np.ndarray = None) -> float:
    """sacrebleu's corpus BLEU of per-sentence statistics ``(sentences, 10)``, sentence i counted ``weights[i]``
    times."""
    return bleu_from_statistics(stats.sum(0) if weights is None else weights @ stats)


def influences(stats: np.ndarray) -> np.ndarray:
    """Jackknife influence of each sentence on one run's corpus BLEU: ``(N−1)·(BLEU − BLEU without it)``."""
    total, n = stats.sum(0), len(stats)
    full = bleu_from_statistics(total)
    return np.array([(n - 1) * (full - bleu_from_statistics(total - row)) for row in stats])


def delta(base: np.ndarray, system: np.ndarray, weights: np.ndarray = None) -> float:
    """Mean corpus BLEU over ``system``'s runs minus over ``base``'s (``(runs, sentences, 10)`` each)."""
    return (float(np.mean([corpus_bleu(s, weights) for s in system]))
            - float(np.mean([corpus_bleu(s, weights) for s in base])))


def sentence_variance(base: np.ndarray, system: np.ndarray, n: int, draws: int, rng: np.random.Generator) -> float:
    """Variance of Δ over test splits of ``n`` sentences drawn with replacement, every seed run kept."""
    big = base.shape[1]
    values = [delta(base, system, np.bincount(rng.integers(0, big, n), minlength=big)) for _ in range(draws)]
    return float(np.var(values, ddof=1))


def split_half_seed_variance(stats: np.ndarray, splits: int, rng: np.random.Generator) -> float:
    """Covariance over seed runs of corpus BLEU on two random disjoint halves of the sentences, averaged over
    ``splits`` halvings: the between-seed variance of model quality (sentence noise is independent across halves)."""
    n = stats.shape[1]
    covs = []
    for _ in range(splits):
        perm = rng.permutation(n)
        a = [corpus_bleu(run[perm[: n // 2]]) for run in stats]
        b = [corpus_bleu(run[perm[n // 2:]]) for run in stats]
        covs.append(np.cov(a, b)[0, 1])
    return float(np.mean(covs))


def _shown(path: Path) -> str:
    """``path`` relative to the checkout (or its parent, for ../shared) where it lies there: no machine paths."""
    path = path.resolve()
    for base, prefix in ((REPO, ""), (REPO.parent, "../")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            pass
    return str(path)


def project(args) -> Dict:
    archive = Path(args.archive)
    refs = read_lines(Path(args.refs))
    seeds = [int(s) for s in args.seeds.split(",")]
    systems = args.systems.split(",")
    stats: Dict[str, np.ndarray] = {}
    for system in dict.fromkeys(systems + [s for s in args.pool.split(",") if s]):
        runs = [archive / "jobs" / f"{system}_s{seed}" / "hyp.test.gz" for seed in seeds]
        if all(p.exists() for p in runs):
            stats[system] = np.stack([bleu_statistics(read_lines(p), refs) for p in runs])
    missing = [s for s in systems if s not in stats]
    if missing:
        raise SystemExit(f"decisive_design: {archive} lacks hyp.test.gz of {', '.join(missing)} (seeds {args.seeds})")
    base, comb = stats[systems[0]], stats[systems[1]]
    n0, k0 = len(refs), len(seeds)
    rng = np.random.Generator(np.random.PCG64(args.seed))

    # -- per system: BLEU per seed run, seed×sentence variance, model-quality seed variance
    per: Dict[str, Dict] = {}
    infl: Dict[str, np.ndarray] = {}
    for name, st in stats.items():
        infl[name] = np.stack([influences(run) for run in st])
        bleus = [corpus_bleu(run) for run in st]
        s2 = float(np.var(bleus, ddof=1))
        eps = float(np.mean(np.var(infl[name], axis=0, ddof=1)))
        per[name] = dict(bleu=bleus, s2=s2, sigma2_eps=eps, eps_share_of_s2=eps / n0,
                         sigma2_a_split_half=split_half_seed_variance(st, args.splits, rng),
                         sigma2_a_moment=s2 - eps / n0)
    pair = systems[:2]
    sig_eps = sum(per[s]["sigma2_eps"] for s in pair)
    v_obs = float(np.var(infl[pair[1]].mean(0) - infl[pair[0]].mean(0), ddof=1))
    v_common = max(0.0, v_obs - sig_eps / k0)
    s2 = {s: per[s]["s2"] for s in pair}
    sigma2_a_est = float(np.mean([per[s]["sigma2_a_split_half"] for s in pair]))
    sigma2_a = max(0.0, sigma2_a_est)
    sigma2_a_high = max(sigma2_a, max(per[s]["sigma2_a_split_half"] for s in pair))
    pooled = [s for s in per if s in args.pool.split(",")]
    sigma2_a_pool = float(np.mean([per[s]["sigma2_a_split_half"] for s in pooled])) if pooled else None

    def n_var(c: float) -> float:  # n · variance of the sentence part, per unit of the seed×sentence factor c(k)
        return v_common + sig_eps * c

    c_fixed = lambda k: 1.0 / k  # noqa: E731
    c_boot = lambda k: (2 * k - 1) / k ** 2  # noqa: E731

    # -- the sentence part at each n, by resampling (the 3 seed runs of each system fixed)
    v_s3 = {n: sentence_variance(base, comb, n, args.draws, rng) for n in sorted({n0, *args.sizes})}

    def boot_var(n: int, k: int, stays: bool = False, s_a: float = sigma2_a) -> Dict[str, float]:
        sent = v_s3[n] * n_var(c_boot(k)) / n_var(c_fixed(k0))
        seed = (k - 1) / k ** 2 * sum(s2[s] if stays else s_a + (s2[s] - s_a) * n0 / n for s in pair)
        return dict(sentence=sent, seed=seed)

    def calibrated(n: int, k: int) -> float:
        sent = v_s3[n] * n_var(c_fixed(k)) / n_var(c_fixed(k0))
        return sent + 2 * sigma2_a / k

    # -- check: the report's own bootstrap on the archive with k of the 3 seed runs (every choice of them)
    hyps = {s: [read_lines(archive / "jobs" / f"{s}_s{seed}" / "hyp.test.gz") for seed in seeds] for s in pair}
    check = []
    for k in range(1, k0 + 1) if args.check_samples else ():
        widths = []
        choices = list(itertools.product(itertools.combinations(range(k0), k), repeat=2))
        if len(choices) > args.check_max:  # many seed runs (a later archive): a fixed random share of the choices
            choices = [choices[i] for i in sorted(rng.choice(len(choices), args.check_max, replace=False))]
        for bi, ci in choices:
                cmp = seed_pooled_bootstrap([hyps[pair[1]][i] for i in ci], [hyps[pair[0]][i] for i in bi], refs,
                                            args.check_samples, args.bootstrap_seed)
                widths.append((cmp.high - cmp.low) / 2)
        # the projection with these k runs: s² over the k-run subsets is, on average, the 3-run s²
        parts = boot_var(n0, k) if k > 1 else dict(sentence=v_s3[n0] * n_var(1.0) / n_var(c_fixed(k0)), seed=0.0)
        check.append(dict(k=k, report_half_width=float(np.mean(widths)), subsets=len(widths),
                          projected=Z * math.sqrt(parts["sentence"] + parts["seed"])))
    full = seed_pooled_bootstrap(hyps[pair[1]], hyps[pair[0]], refs, args.check_samples or 1000, args.bootstrap_seed)

    rows = []
    for n in args.sizes:
        for k in args.ks:
            b, bs, bh = boot_var(n, k), boot_var(n, k, stays=True), boot_var(n, k, s_a=sigma2_a_high)
            rows.append(dict(n=n, k=k, jobs=2 * k, sentence_sd=math.sqrt(b["sentence"]), seed_sd=math.sqrt(b["seed"]),
                             half_width=Z * math.sqrt(b["sentence"] + b["seed"]),
                             half_width_high=Z * math.sqrt(bh["sentence"] + bh["seed"]),
                             half_width_stays=Z * math.sqrt(bs["sentence"] + bs["seed"]),
                             half_width_calibrated=Z * math.sqrt(calibrated(n, k)),
                             cpu_hours=k * SEC_PER_JOB_CPU_H, gpu_waves=math.ceil(2 * k / GPU_WAVE)))
    return dict(archive=_shown(archive), refs=_shown(Path(args.refs)), systems=pair, seeds=seeds, test_sentences=n0,
                observed=dict(delta=full.delta, low=full.low, high=full.high, half_width=(full.high - full.low) / 2,
                              samples=args.check_samples or 1000, bootstrap_seed=args.bootstrap_seed),
                per_system=per, v_observed=v_obs, v_common=v_common, sigma2_eps_sum=sig_eps,
                sigma2_a=sigma2_a, sigma2_a_estimate=sigma2_a_est, sigma2_a_high=sigma2_a_high,
                sigma2_a_pooled=sigma2_a_pool, pooled=pooled,
                sentence_variance_3_seeds={str(n): v for n, v in v_s3.items()}, check=check, rows=rows,
                options=dict(draws=args.draws, splits=args.splits, seed=args.seed))


def render(r: Dict) -> str:
    b, c = r["systems"]
    o = r["observed"]
    out = [f"decisive design: Δ test BLEU {c} − {b}, {len(r['seeds'])} seeds, {r['test_sentences']} test sentences "
           f"({r['archive']})",
           f"observed (the report's bootstrap, {o['samples']} samples, seed {o['bootstrap_seed']}): "
           f"{o['delta']:+.2f} [{o['low']:+.2f}, {o['high']:+.2f}], half-width {o['half_width']:.2f}", ""]
    out.append("per system: corpus BLEU per seed run; s² between seeds; σ²_ε/N (seed×sentence noise in s²); "
               "σ²_a (model quality) by split halves and by s² − σ²_ε/N")
    for name, p in r["per_system"].items():
        out.append(f"  {name:12s} {' '.join(f'{x:.2f}' for x in p['bleu'])}   s² {p['s2']:.3f}   σ²_ε/N "
                   f"{p['eps_share_of_s2']:.3f}   σ²_a {p['sigma2_a_split_half']:+.3f} / {p['sigma2_a_moment']:+.3f}")
    pooled = f"; over {', '.join(r['pooled'])}: {r['sigma2_a_pooled']:+.3f}" if r["pooled"] else ""
    out.append(f"σ²_a used: {r['sigma2_a']:.3f} (estimate {r['sigma2_a_estimate']:+.3f} over {b}, {c}, floored at 0"
               f"{pooled})")
    out.append(f"sentence part, n·Var of Δ with the 3 runs fixed: {r['v_observed']:.1f} = common {r['v_common']:.1f} "
               f"+ seed×sentence {r['sigma2_eps_sum']:.1f}/3: nearly all of it averages away over seeds")
    out += ["", f"check, n = {r['test_sentences']}: the report's bootstrap on the archive with k of the 3 seed runs "
            "(mean over every choice) against the projection"]
    for ch in r["check"]:
        out.append(f"  k = {ch['k']}: report {ch['report_half_width']:.2f} ({ch['subsets']} choices), "
                   f"projected {ch['projected']:.2f}")
    out += ["", "expected 95 % half-width of Δ (BLEU) in the report's bootstrap: with σ²_a as estimated (sentence and "
            f"seed sd: its two parts), with σ²_a = {r['sigma2_a_high']:.3f} (the larger single-system estimate), with "
            "every seed difference seen on the 500 staying (pessimistic); and 1.96 × the calibrated sampling sd",
            "", "| test sentences n | seeds k | jobs | sentence sd | seed sd | half-width (report) | σ²_a = "
            f"{r['sigma2_a_high']:.2f} | if seed differences stay | calibrated | CPU hours (2 at once) | GPU waves |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        mark = "**" if row["half_width"] <= 0.5 else ""
        out.append(f"| {row['n']:,} | {row['k']} | {row['jobs']} | {row['sentence_sd']:.3f} | {row['seed_sd']:.3f} | "
                   f"{mark}{row['half_width']:.2f}{mark} | {row['half_width_high']:.2f} | "
                   f"{row['half_width_stays']:.2f} | {row['half_width_calibrated']:.2f} | {row['cpu_hours']:.1f} | "
                   f"{row['gpu_waves']} |")
    opts = r["options"]
    out += ["", f"(draws {opts['draws']}, split halvings {opts['splits']}, seed {opts['seed']}; bold: ≤ 0.5)"]
    return "\n".join(out)


def main(argv: Sequence[str] = None) -> int:
    from onmt_xl.experiments.inputs import shared_data

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archive", default=str(REPO / "reports" / "evidence_jaen_inxl_identity"),
                   help="archive whose jobs/{baseline,combination}_sK/hyp.test.gz are read (default: the 3-seed runs "
                        "that sized the design)")
    p.add_argument("--refs", default=str(shared_data() / "enja" / "dev.en"), help="the test references")
    p.add_argument("--systems", default="baseline,combination", help="baseline,system")
    p.add_argument("--pool", default="baseline,combination,relative_pe,inxl,headxl",
                   help="systems whose seed variance is also pooled (a sensitivity line, not used in the table)")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--sizes", type=lambda t: [int(x) for x in t.split(",")],
                   default=[500, 1000, 2000, 3000, 5000, 5500, 8000])
    p.add_argument("--ks", type=lambda t: [int(x) for x in t.split(",")], default=[3, 5, 8])
    p.add_argument("--draws", type=int, default=2000, help="resampled test splits per n (default 2000)")
    p.add_argument("--splits", type=int, default=200, help="random halvings for σ²_a (default 200)")
    p.add_argument("--seed", type=int, default=20261127, help="seed of every draw here (default 20261127)")
    p.add_argument("--check-samples", type=int, default=1000,
                   help="samples of the report's bootstrap in the check (0: no check)")
    p.add_argument("--check-max", type=int, default=9, help="choices of k seed runs per system pair checked, at most "
                   "(default 9: every one with 3 seeds; more seeds: a fixed random share)")
    p.add_argument("--bootstrap-seed", type=int, default=12345, help="seed of the report's bootstrap (12345)")
    p.add_argument("--json", help="also write the numbers here")
    args = p.parse_args(argv)
    result = project(args)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
