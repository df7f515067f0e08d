// Package spool is msched's state machine in the file system: a job is a
// YAML file, its state is the directory the file is in, and every change of
// state is one rename(2).
//
// # Who may write what
//
// Anyone may add a file to submitted/ (Submit, or any program that writes a
// dot-file and renames it). Anyone may add a request to control/
// (RequestCancel). "Anyone" is every local user when the daemons run as
// root: see "Users and permissions" below. Everything else is written by
// the daemons, and each
// state directory has exactly one owner: only the owner edits (Update),
// moves out of (Move) or removes (Remove) files in it; others read, and add
// where the table below says so — by being the owner of the source of a
// legal move. The web page and `msched status` only read (List, Read, Find).
// A daemon works through its view, Spool.As(daemon): Move, Update, Remove,
// Recover, Claim and RecoverClaims then refuse states it does not own.
//
//	state       owner   added by          what the job file gains there
//	submitted   init    anyone            the user's request (name, command, hosts, …)
//	queued      sched   init, sched, run  jid, user, submitted_at, history
//	scheduling  sched   sched             (nothing: in the optimiser's pool)
//	runnable    run     sched             schedule: hosts, predicted_seconds, decided_at, policy
//	running     run     run               run: started_at, attempts, host; then pid, pgid
//	finished    reaper  run               run: ended_at, exit_status or signal (or reason)
//	rejected    reaper  init, sched, run  reason; for bad submissions also original
//
// Other directories: tmp/ (staging and claims; the spool's writers only),
// control/ (requests), output/ (job output), reports/ (rendered reports),
// db/ (JID counter and the other daemons' databases). All are on one file
// system; Open refuses a layout that is not.
//
// # Legal moves
//
// This table mirrors Transitions in state.go line for line (a test compares
// them). The owner of from performs the move. Anything else is refused by
// Move with an error naming both states.
//
//	from        to          by      why
//	submitted   queued      init    valid submission; JID, user, submitted_at added
//	submitted   rejected    init    unparseable or invalid; original bytes and reason kept
//	queued      scheduling  sched   taken into the optimiser's pool
//	queued      runnable    sched   placed directly (non-GA policy); schedule added
//	queued      rejected    sched   cancelled, or can never be placed
//	scheduling  queued      sched   recovery at start, or evicted from the window
//	scheduling  runnable    sched   hosts and prediction chosen; schedule added
//	scheduling  rejected    sched   cancelled, or can never be placed
//	runnable    running     run     about to start; run.started_at, attempts added
//	runnable    queued      run     could not start; attempts below the limit
//	runnable    rejected    run     cancelled before start, or attempts exhausted
//	running     finished    run     ended, killed, cancelled, or start failed for good
//	running     queued      run     start failed or job lost; attempts below the limit
//
// finished/ and rejected/ are where a job ends: nothing moves out of them,
// and the reaper empties them (Remove) after it has reported each job to
// its user (its report and accounting record say "exited" or "rejected":
// Outcome) and compared its actual run time with the predicted one.
// A job's hosts are free once it has left running/: that is how sched
// learns it, from the running/ it reads for every decision.
//
// Before, a job went finished → exited (sched, to compare actual with
// predicted and see the hosts free) and the reaper reported it from
// exited/: a write, two renames and an fsync per job for what the reaper
// computes anyway. A spool written then may hold jobs in exited/; the
// reaper moves them to finished/ at start (RecoverExited), and a history
// may still name exited.
//
// Decisions:
//
//   - running → rejected is not a move. Once a job reaches running/ it may
//     have started, so it leaves only through finished/ (reported with its
//     output, exit status and times; its hosts free for the scheduler once
//     it has left running/) or back to queued/ for another attempt. A start
//     that fails for the last time goes to finished/ with run.exit_status
//     unset and reason set. The run daemon moves runnable → running before it
//     starts the process, so a crash can never leave a started job in
//     runnable/ to be started again.
//   - Cancel. `msched cancel J` writes control/cancel.J.<uid>.<tag> (the
//     requester's uid and a random tag, renamed in without replacing, so
//     that no one can take a request's name first; cancel.J.<uid> and
//     cancel.J, older names, are still read, and a name whose uid is not
//     its file's owner's is junk),
//     whose content states the request ("cancel J <time>", ControlBody): a
//     file's owner is who asks, but a user may rename into control/ a file
//     she did not write, so a request must also say what it asks. Only
//     the job's owner (its uid) or root may cancel it (Control.Allowed, the
//     one rule, asked by sched, run, the reaper and the command); a request
//     from anyone else is removed and logged with who tried. Otherwise the
//     owner of the state the job is in acts and removes the request: a job that never ran
//     (queued, scheduling, runnable) goes to rejected/ with reason
//     "cancelled" — rejected, not finished, because it has no exit status and
//     no output to report; a running job is signalled, cancel_requested is
//     set, and it ends in finished/ like any job that was killed, so its
//     partial output reaches the user. A job still in submitted/ has no JID
//     and cannot be named; its submitter may delete the file. A request
//     whose job is already in finished/ or rejected/, or unknown, is
//     removed by the reaper.
//   - A bad submission keeps the user's bytes. Init claims the file (below)
//     and moves a wrapper job file to rejected/<JID>: jid, user,
//     submitted_at, history, the reason (every problem, "job.yaml:3:
//     hosts.min: must be ≥ 1, got 0", one per line), name and notify if they
//     could be salvaged, and original: the submitted bytes verbatim (as
//     !!binary if not UTF-8). One file, so one atomic move, and the reaper
//     reports it to the user like any rejected job — from notify, else to
//     the user (the file's owner), and into reports/.
//
// # Submissions and claims
//
// submitted/ is a directory anyone may write, so init never edits a
// file there. Claim allocates a JID and renames submitted/<name> to
// tmp/claim.<JID>.<arrival>.<name>: the bytes init judges can no longer
// change, a later file of the same name is a new submission, and daemon
// sections in a submission (jid, user, uid, history, …) are refused, so a
// user cannot forge them. Move(j, Submitted, …) then writes the job to the
// destination and removes the claim.
//
// What was renamed is whatever the user had put under that name by then:
// init's check before the rename (a regular file?) and the rename are not
// one step, and a user who swaps a file and a symbolic link under one name
// wins the race often. So a claim is read once, through one descriptor
// (readUntrusted: opened relative to tmp/ with O_NOFOLLOW|O_NONBLOCK, a
// regular file with one name, of at most the job-file bound (MaxJobFile, or
// init.max_job_bytes: JobFileLimit) by its fstat, read through that
// descriptor up to the bound plus one byte; nobody but its owner may write
// it: not others, and its group only if that is the owner's private
// group without an ACL), and the job's
// uid and user are the owner of that descriptor's file. A claim that is
// not such a file (a link, symbolic or hard — a hard link's owner is the
// file's, not the linker's —, a FIFO, a directory, a socket, too large,
// unreadable) is Refused:
// rejected with what it is as the reason, under its entry's owner (lstat),
// like any bad submission; it never stops ClaimAll or RecoverClaims, so no
// user can keep init from starting. A rejection keeps the submitted bytes,
// except of a file over the bound (its first 4 KiB) and of a refused
// entry (none). Before it is parsed, a submission is also bounded in the
// places a YAML item may begin, so that the parser's memory is bounded by
// the bytes; the parse then bounds nesting, command, env and mappings, and
// refuses aliases and merge keys (parse.go). A rejected file's name and
// notify address are salvaged from its parsed node tree, never decoded.
//
// An array submission (array:, array.go) is many jobs from one claim.
// Before init queues any of them it reserves their JIDs, the claim's own
// for the first and consecutive ones after it, by renaming the claim to
// claim.<JID>+<first>-<last>.<arrival>.<name> (ReserveArray); the claim
// has served once every one of those JIDs is in a state or reaped, and
// RecoverClaimsWith hands back one that has not with the members already
// queued marked, so that init queues only the others, under the JIDs
// reserved.
//
// Submitters should write a dot-file and rename it into submitted/ (Submit
// does): such a file is claimed at once. A file written in place is claimed
// only once no process has it open for writing (a read lease is refused
// while one has) and it has not changed for QuietTime (arrival.go); init
// tells the two apart by its own inotify watch (a rename-in is
// IN_MOVED_TO). A writer that closes the file between pieces and pauses
// longer than QuietTime can still have it claimed half-written; it is then
// judged as it is — usually rejected, its bytes kept — never run half-read.
//
// # Moves and crashes
//
// Between daemon-owned states, Move(j, from, to) does:
//
//	M1  write the new content (history ends in {to}) to tmp/x; fsync x
//	M2  rename tmp/x → from/J (from/ is not fsynced: M4 commits this too)
//	M3  rename from/J → to/J
//	M4  fsync to/ (on a file system that journals metadata in order —
//	    ext4, xfs, btrfs — this commits M2 and the removal from from/ with
//	    the arrival in to/; elsewhere a crash may keep both names, or lose
//	    M2 and keep M3, which the line "after M3" below covers)
//
// A crash leaves:
//
//	before M2   from/J, old content; maybe a stale tmp/x (CleanTmp)
//	after M2    from/J, new content: a move "in flight" that Recover(from) completes
//	after M3    to/J (on ext4, xfs, btrfs a rename is atomic across a crash);
//	            on a file system that is not: maybe from/J (new or old content)
//	            and to/J; Recover(from) finds the copy in to/ (or further on) with
//	            a longer history (at least as long, if from/J's history ends in
//	            to) and removes from/J
//
// From submitted (init):
//
//	C1  allocate the JID: db/jid rewritten atomically under flock(2)
//	C2  rename submitted/name → tmp/claim.J.…; fsync tmp/, submitted/
//	S1  write the new content to tmp/x; fsync; rename → to/J; fsync to/
//	S2  remove the claim; fsync tmp/
//
//	before C2   submitted/name; JID J burned (never reused, never seen)
//	after C2    the claim only: RecoverClaimsWith returns it and init judges it again
//	            as J, unless J is in a state directory or its accounting record
//	            says it was reaped (then the claim is removed: the job is done)
//	after S1    the claim and to/J: RecoverClaims removes the claim
//
// A Batch (daemons moving a burst) does M1–M3 for each of its moves and M4
// once per directory at Commit, and removes the claims of its moves from
// submitted only after that: until Commit its moves are visible but not
// durable, and a crash leaves each job where it was or where it went,
// claimed or not, which the owners' recoveries resolve as above.
//
// Temporaries are staged in tmp/<daemon>/ for a daemon's view (As), in
// tmp/ otherwise; a daemon recycles them (atomicfile.Pool): a replaced
// file's old inode becomes its next temporary. Only one daemon of each kind
// works on a spool at a time (LockDaemon, an flock on db/<daemon>.lock).
//
// Guarantees:
//
//   - A job is never lost: at every instant its file exists under a name that
//     its owner's recovery examines (a state directory, or a claim in tmp/).
//   - A job file is in exactly one state directory (or, while init judges
//     it, in no state but claimed in tmp/, which Find reports as submitted),
//     except after a crash after M3 on a file system whose rename is not
//     atomic across a crash; then it is in two, the stale copy in the
//     mover's directory, and the mover's Recover removes it. Readers in the meantime (Find) prefer
//     the copy with the longer history. Recover's check for the newer copy
//     and another daemon moving that copy on are not atomic with each other,
//     so on such file systems run recovery before the other daemons start.
//   - A reader never sees a partial job file: every write is tmp + fsync +
//     rename.
//   - A JID is given to at most one job, across processes and restarts.
//   - A job is not silently run twice: the run daemon records running/ before
//     starting; after a crash it finds the job there and must decide
//     (lost → re-queue with a history note, or still running → keep).
//
// Every fsync is there for a reason: the file before its rename (else a
// crash can keep the rename and lose the data — a zero-length job file), the
// directory after a rename (else the rename itself can be lost; M2's is
// made durable by M4's, the same journal commit). renameio
// and go-maildir leave the directory fsync to the caller; the spool does it.
// On NFS none of this holds (rename and fsync are not atomic or durable in
// the same way): keep the spool on a local file system.
//
// # Users and permissions
//
// The daemons run as root to serve every local user, or as one ordinary
// user to serve that user alone; Create sets the spool up for either.
//
// As root, Create makes submitted/ and control/ mode 1777, as /tmp: every
// local user may submit a job and ask for a cancel, and the sticky bit
// keeps each from removing or renaming anyone else's file there (a user
// cannot withdraw or replace another's submission or request). The other
// directories are 0755: everyone may read job files (the web page,
// `msched status`), only the daemons write; tmp/, where claims are, is
// not writable by users, so a claim cannot be touched after init took it.
// Running Create again as root repairs these modes. A job is its
// submitter's: init takes the owner of the submitted file as its uid and
// user (a user cannot forge another's file: chown is root's), the job runs
// as that uid, a cancel is honoured only from it or root, and its report
// (reports/<JID>.txt, with the job's output) is written owned by it with
// mode 0600, readable by nobody else. The web page shows output and
// reports only to the operator (web.token), and a resubmission it makes is
// the job owner's file, not root's.
//
// As an ordinary user, Create makes every directory 0755 (and leaves
// existing ones alone): only that user writes the spool, and init rejects
// a submission owned by anyone else ("submitted by bob (uid 1002), but
// these daemons run as alice (uid 1001) and run only alice's jobs"), since
// a job there would run with alice's rights.
//
// Whatever a user puts in submitted/ or control/ is untrusted: the daemons
// read it only through readUntrusted (no link followed, no blocking open,
// a regular file within a bound: MaxJobFile for a job file, MaxControl for
// a request; that no one but its owner may write), and what is no such file is rejected (a claim) or removed
// and logged (a request), never fatal. output/<JID>/ is the job's user's
// own directory: the reaper reads the captured output there for a report
// through OpenUntrusted (no link followed, no blocking open, a regular
// file only).
//
// # Waking up
//
// Watch gives a daemon a channel that wakes it on fsnotify events in its
// directories and control/, on a rescan tick, and at once after an event
// overflow or watcher error (the watcher is then recreated). A wake-up
// means "rescan": daemons always work from List, never from event names, so
// a lost or coalesced event costs latency, not correctness.
package spool
