// Package profiler is Gibbons' historical application profiler ("A
// Historical Application Profiler for Use by Parallel Schedulers", MSc
// thesis, Toronto 1997, ch. 4; SEEDS.md §2): it predicts a job's run time
// from the run times of earlier jobs of the same executable and user. The
// "executable" is a command line's Category: argv[0], and for a shell or
// an interpreter also what it runs (sh -c TEXT, python3 train.py), so that
// every shell job does not share one history.
//
// # What is kept
//
// No raw records: per category, sufficient statistics (n, Σt, Σt², Σp) in
// cells of processor bin ⌈log2 p⌉ (1, 2, 3–4, 5–8, 9–16, …) × run-time bin.
// The categories are (executable, user), executable over all users, and the
// whole system. A file (Open) keeps the (executable, user) cells in one
// bbolt database; the coarser levels are their sums, rebuilt on opening.
//
// # What is answered
//
// Estimate gives the mean run time and the half-width of its Student-t
// confidence interval (default 95 %), trying (executable, user), then the
// executable, then the system. Within a level: with three or more processor
// bins holding runs, T(p) = a/p + b + c·p fitted by weighted least squares
// to the bins' (mean p, mean t), each weighted by 1/variance of its mean
// (n/s²; see FitBins for bins of one run or no spread), and the interval
// t(N−3)·√(x₀ᵀ(XᵀV⁻¹X)⁻¹x₀); else the plain mean of the job's processor bin
// (two runs at least); else the next level. Student-t quantiles and the
// weighted least squares are gonum's (stat/distuv, mat).
//
// # Conditioning on attained run time
//
// Once a job has run R seconds, runs shorter than R are excluded (thesis
// §4.2). With sufficient statistics only, each processor bin is split into
// run-time bins four to an octave (bin edges 2^(k/4) s), and "runs of at
// least R" is approximated by the bins from R's own upward: the runs kept
// may be shorter than R by up to a factor 2^¼ ≈ 1.19 (those in R's bin
// below R), none at least R is dropped. Where no run that long exists the
// estimate is raised past R (Profiler.Estimate).
//
// # Feeding it
//
// Observe counts one finished run. FeedFromAccounting follows the reaper's
// accounting log (spool/db/accounting.jsonl) and observes each completed
// job once, even across restarts; the simulator observes jobs as they end
// (sim's --estimate profiler). Model and Predictor put the profiler where
// performance models go: a job without a model is predicted as the top of
// its interval, Mean + HalfWidth, under the rule of Predictor (the
// walltime caps every prediction, and only the user's own history of the
// command predicts below it), which records where each prediction came
// from (Source, Sources).
package profiler
