//! Self-collision on a charged cloth closing on itself (issue 18): a 2 m, 41 × 41 cloth whose
//! halves carry ±40 µC falls freely (or, with `both`, onto a 0.6 m sphere collider) at
//! h = 1/120 s; prints the time per step, the largest move in a step and the closest pair of
//! opposite charges. Modes: `none`, `self` (self-collision), `collider`, `both`.
//!
//! What it shows (2-core VM): until the halves meet, self-collision costs about 3 plain steps
//! (0.02 vs 0.006 s/step). Where they meet, the attraction presses the layers together harder
//! than the contact passes resolve at this step: pairs of opposite charges end steps a few mm
//! apart, the explicit Coulomb kick there moves vertices metres, and the step time grows with
//! the swept boxes (seconds per step) until the runaway guard stops the run. Without
//! self-collision the halves pass through each other and the run stays bounded.
//!
//! Issue 30 (charges spread over balls of radius a = 1.25 cm, contacts projected by mass to a
//! tolerance), measured on the shared 2-core VM, 2 threads, against the code before (a copy
//! of commit 15b743e built alike): the first 45 steps (before the halves meet) cost 10 ms/step
//! with self-collision against 3.8 ms plain (`self` vs `none`: 2.6×; before, 28 vs 15 ms in a
//! busier run, 1.9×). With mild charges (`240 both 4`, ±4 µC) the cloth drapes on the sphere
//! and slides off to the end: 14 ms/step (3.40 s for 240 steps) against 4.5 ms with the
//! collider alone (3.1×), no step failing (`tests/contacts.rs` checks it edge by edge). At
//! ±40 µC it is still violent where the halves meet (step ~48): the largest move per step
//! grows to 0.3–1.0 m from step 49 on (before: 1.7, 3.3, 17.8, 41, 64 m at steps 52–57) and
//! opposite charges end steps 0.2–1 mm apart, and the step time still climbs to seconds by
//! step 55–60 (2.3–9.9 s; before 2.8–6.5 s): the halves meet at tens of m/s, more than a
//! step's linearised contact tests follow. That run does not reach its end; that remains open.
//!
//! With continuous self-collision (swept vertex–triangle and edge–edge tests) and the add-on's
//! defaults (`240 both 40 adaptive` → `48 both 40 adaptive`: 1/24 s frames of `advance`, 3–32
//! steps, iterations to 10⁻³), measured on the shared 2-core VM: the ±40 µC fold runs its 48
//! frames (2 s) in 57.8 s, 6–32 steps per frame (12 from frame 14 on), opposite charges
//! 13–15 mm apart (the 15 mm distance) at every frame, no vertex thrown (largest move per frame
//! ≤ 0.5 m, while it falls off the sphere); `tests/contacts.rs` checks it frame by frame. Before
//! continuous detection the same run threw vertices 0.7 m in frame 29 (opposite charges 2.8 mm
//! apart) and then spent minutes per frame. Its cost was still high: 1.92 s for the same 48
//! frames without self-collision (`48 collider 40 adaptive`, where the halves pass through
//! each other), about 30× less. At fixed steps of 1/120 s (`240 both 40`) the meeting still
//! ran away (0.5–0.8 m moves per step from step 62, seconds per step).
//!
//! With edge pairs tested once over a tree of edges, trees refit rather than rebuilt, impact
//! zones for the crossings the passes leave, and self-collision run again where the sphere
//! pushed vertices (`collision::SelfCollision`, `step.rs`), same VM, one quiet run:
//! `48 both 40 adaptive` takes 24.5 s (586 steps, 42 ms per step; the code before took
//! 58.0–58.5 s, about 100 ms per step) against 2.0 s with the sphere alone (202 steps, 9.8 ms
//! per step: 4.3× per step, 12× per frame; see below for what those step counts missed). ±36 and ±44 µC, which tangled or stalled before
//! (a crossing the passes left at frame 24–32, then minutes per frame), run to the end
//! (`tests/contacts.rs` checks ±36, 40 and 44 µC for crossings); ±10 to ±80 µC ran in 2.5 to
//! 102 s before the second self-collision pass was added. At fixed steps of 1/120 s
//! (`240 both 40`) the run reached its end (18 s, moves ≤ 0.12 m per step), though opposite
//! charges came to 4 mm there: the 15 mm distance is held only where the steps are as short
//! as `advance` makes them.
//!
//! The step counts above (586, 202) summed only the frames this example printed, which it
//! chooses by their time; it now counts every step of `advance`: `48 both 40 adaptive` takes
//! 634 steps and `48 collider 40 adaptive` 544, the same in every run and at both builds. So
//! the per-step figures above were wrong: with the sphere alone a step costs 3.4–3.8 ms, not
//! 9.8, and the crumple's ratio was 10–12×, not 4.3×.
//!
//! With the step's pairs taken once as candidates and each later detection testing only those
//! with a vertex that moved since (`collision::ContactStep`), two runs alternating with a build
//! of the code before, same VM: `48 both 40 adaptive` takes 16.5–16.6 s (26 ms per step;
//! before 24.2–25.1 s, 38–40 ms per step) against 1.86–2.07 s with the sphere alone
//! (3.4–3.8 ms per step): 7–8× per step, where 3× was aimed for. With the candidates kept from
//! step to step while they hold, 13.4–13.5 s (21 ms per step, 6×).
//!
//! With the triangles' boxes no longer grown by the distance on both sides, candidates kept
//! under a translation of the whole mesh, trees refit only in the steps that query them and the
//! boxes of what did not move kept between a step's detections, four runs alternating with a
//! build of commit 70030f3: 8.65–9.38 s (13.6–14.8 ms per step; before, 12.3–13.1 s) against
//! 1.80–2.06 s with the sphere alone (3.3–3.8 ms per step): about 4×. Same 634 steps, same end.
//!
//! With the boxes of 2–6 points taken from their least and greatest coordinates instead of
//! parry's point-cloud pass (which `perf` put at 4.9 % of the run), 2026-11-27, quiet VM, 2
//! threads: 12.59–12.64 s over 604 steps (20.9 ms per step; the build before 13.16–13.55 s)
//! against 2.85 s over 544 steps with the sphere alone (5.2 ms per step): 4.0× per step. The
//! rest of the run, from `perf`: the trees' queries for candidates 16 % (taken again in 3 of 4
//! calls: a crumpling cloth leaves the candidates' slack), edge pairs 11 % (49 million over the
//! run, about 9,000 per detection, most of them neighbours in one layer), the box filters 12 %,
//! the direct Coulomb sum 11 %. A larger slack takes them less often but tests more (1.0:
//! 14.2 s, 2.0: 16.8 s), a smaller one the opposite (0.25: 13.3 s); fewer or more projection
//! sweeps per pass do not help (2: 12.6 s, 8: 14.6 s). Two runs of one build print the same
//! positions to the last bit, on any number of threads (`tests/determinism.rs`).
//!
//! With the candidates taken by traversing the trees against each other (the edges' against
//! itself, a tree of the vertices' boxes against the triangles', the two on two threads),
//! put in order by counting, and the edge pairs that stayed on their side and end apart set
//! aside without a square root, 2026-11-27, three runs alternating with a build of 59f7604:
//! 11.7–12.2 s over 604 steps against 2.87–3.02 s over 544 with the sphere alone, 3.6–3.7× a
//! step (the build before: 12.6–13.0 s, 3.8–4.1×), the same end to the bit. Tried and not
//! kept: a slack of 1/4 (as fast here, slower on the calm 100K drape of `collision_cost`);
//! dropping the edge pairs that cannot come within the distance while the candidates hold
//! (it drops a third of them: most pairs here are layers pressed within the distance, and it
//! costs what it saves).
//!
//! With the add-on's frictions (`48 both 40 adaptive friction`: Layer Friction 5/s, Collision
//! Friction 5), three runs alternating, 2026-11-27: 13.1–13.2 s over 630 steps against 2.67–2.80
//! s over 502 with the sphere alone, 3.7–3.9× a step. Before, a step the sphere pushed took the
//! layers' friction twice (15.6–15.8 s over 648 steps), then once with its faces from the
//! refit triangles' tree (13.5–13.9 s); now from the step's candidates.
//!
//! Measured in one process (`48 ratio 40 adaptive`, 2 threads, 2026-11-28): 28.5–29.4 ms per
//! step over 598 steps against 8.7–8.9 ms over 544 with the sphere alone, 3.24× (separate runs
//! minutes apart read 3.5–3.7× that day). Where the self-collision's time goes (timers in a
//! build that did not land): retests about 5–7 s, the step's first full tests 2–3 s, taking
//! candidates 2.4–3.2 s (57,000 edge pairs and 19,500 vertex–triangle pairs a take, taken in
//! 471 of the 598 steps), refits 0.6 s. Each detection finds about 1,000 contacts, a third of
//! them new, so the passes are the contacts' own spreading. Tried and not kept, each finding
//! the same 598 steps and the same end: candidates from a uniform grid instead of the trees
//! (the takes 5.2 s at cells of 1.5 median boxes, 7.1–13.6 s at 0.4, 0.75 and 6, against 2.4–3.2
//! s from the trees: a cell of a crumpled cloth holds several layers, and its pairs grow as
//! their square); detecting contacts within 1.03–1.25 distances so that a pass's sweeps take in
//! the neighbours its pushes reach (at 1.03 a quarter fewer detections, twice the contacts, and
//! the same time in detections, 10.2 against 10.35 s; runs of 15.5–23.7 s against 15.4–18.4,
//! slower from 1.05, and 646 steps at 1.25); keeping, per edge pair, how far its ends may move before it can
//! have a contact, to skip it in the step's later detections (a quarter of the tests skipped,
//! at the cost of bounding every pair: 16.4–17.6 s against 15.8–16.6).
//!
//! Counted in instructions (callgrind, one thread, the first 11 frames: `valgrind
//! --tool=callgrind target/release/examples/crumple_cost 11 both 40 adaptive` with
//! `RAYON_NUM_THREADS=1`), which the VM's drift does not move: 8.09 billion. Each vertex's
//! candidate triangles queried in the triangles' tree, instead of a tree of the vertices'
//! boxes built at every take and traversed against it: 7.79 billion (the candidates 0.59 →
//! 0.26 in a draft where callgrind still showed them apart; same states). Tried and not kept: each edge's candidates queried in the edges' tree
//! in parallel, instead of one traversal of the tree against itself (the edge candidates 0.44
//! → 1.38 billion: each pair is found twice and each query descends from the root); a
//! retest listing the pairs of the vertices that moved from a per-item index, instead of
//! checking every candidate's flags (1.6 % more instructions over 14 frames: a third of the
//! pairs have a moved vertex, and listing them costs what checking the rest did).
//!
//! With the narrow phase's first decisions taken four pairs at a time in vector registers
//! (`narrow::apart` for edge pairs; `narrow::vertex_apart` for a vertex and a triangle: off its
//! plane on the side it started, and farther from it than the distance and than the two moved
//! relative to each other in the step), 2026-11-28, on a 2-core Intel Xeon VM where the crumple
//! read 4.35–4.46× before (`48 ratio 40 adaptive`, 22.95–23.06 against 5.14–5.30 ms per step): they
//! set aside 51.9 of the 53.8 million edge pairs and 14.7 of the 15.8 million vertex–triangle pairs
//! that reach the narrow phase over the 48 frames, and the run takes 16.1–16.7 ms per step against
//! 4.6–4.7 with the sphere alone, **3.50–3.53×** (two runs of each build in turn; with the edge
//! pairs alone in lanes 17.5–18.1 ms, 3.70–3.87×). The same 598 steps and the same states, to the
//! bit. In instructions (callgrind, above): the self-collision's 2.68 → 2.42 (edge pairs in lanes)
//! → 2.20 billion (−18 %; the detections' tests 1.52 → 1.04), the run's 7.78 → 7.28.
//!
//! With the swept boxes taken in a plain loop over their corners (the self-collision's
//! instructions 2.21 → 2.13 billion, callgrind as above) and the edges' tree in two halves by
//! index, whose pairs a take finds in three traversals beside the vertices' queries instead of
//! waiting on one thread for one traversal (timers in a build that did not land: the takes 2.0–2.2
//! s → 1.6–1.7 s over the 48 frames), 2026-11-29, same kind of VM, four runs of each build in
//! turn: 15.6–15.9 ms per step against 4.5–4.6 with the sphere alone, **3.43–3.51×** (with the
//! boxes' loop alone, 16.4–16.6 ms, 3.58–3.66×; on one thread both take 14.6 s). The same 598
//! steps and states.
//! Tried and not kept: the three trees refit in parallel (the takes' refits 0.46 → 0.30 s, the
//! run no faster: 9.36–9.39 s against 9.28).
//!
//! With the candidates taken again for the vertices that left the slack alone, where they are
//! at most an eighth of the vertices (`SelfCollision::retake`: their triangles' and edges'
//! pairs dropped and looked for afresh in the trees, the others' kept), 2026-11-29, same VM,
//! four runs of each build in turn: 15.24–15.55 ms per step against 4.48–4.52 with the sphere
//! alone, **3.38–3.44×** (the build before: 15.60–16.14 ms, 3.44–3.55×); on one thread 12.6–13.4
//! s against 13.5–13.7. The same 598 steps and states. A take leaves the slack with 4 % of the
//! vertices on average; over the 48 frames 480 takes take the strays' pairs again (1.0 ms each)
//! and 238 take all afresh (3.2 ms), where before 471 took all afresh: a vertex that stayed keeps
//! its older box, so the candidates are taken more often, and the takes' time goes from about
//! 1.5 to 1.3 s (timers in a build that did not land).
//!
//! With each detection's contacts put in the sweeps' order by counting them into one run per
//! vertex instead of sorting them (`SelfCollision::sweep_order`, which runs on one thread while
//! the other waits), same day and VM, four runs of each build in turn: 14.85–15.47 ms per step
//! against 4.55–4.80 with the sphere alone, **3.11–3.28×** (the build before: 15.73–16.08 ms,
//! 3.36–3.38×, and one run at 17.74 against 5.65, 3.14×, while the VM was slow); on one thread
//! 13.8–13.9 s against 14.1–14.3. The same 598 steps and states.
//!
//! With the candidates' slack 0.35 of the distance instead of 1/2 (`CANDIDATE_SLACK`: fewer
//! pairs to test at every detection, taken more often, now mostly for the strays alone), three
//! runs of each in turn: 14.75–15.49 ms per step against 4.58–5.05, **3.07–3.24×** (1/2:
//! 15.50–16.12 ms, 3.27–3.47×; 1/4: 2.98–3.20×, but slower on the calm drape of
//! `collision_cost`, where 0.35 is as fast as 1/2). The same 598 steps and states.
//!
//! Timers in a build that did not land then showed the trees' refits (about 2,100 over the
//! run, 1,600–3,200 leaves each) taking 0.85 s on 2 threads and 0.63 s on one: each collected
//! its leaves' boxes in parallel before refitting. A plain loop on one thread refits them in
//! 0.41 s. And an edge pair's test read the distances of its four vertices; each edge's larger
//! one is now kept with the candidates, so it reads two, and tests the pair's boxes at the
//! pair's own distance at once (before, at the largest distance first). 2026-11-29, same VM,
//! three runs of each build in turn (the build before: commit 9874ba0): 13.41–13.63 ms per step
//! against 4.48–4.59 with the sphere alone, **2.93–3.04×** (before: 14.40–15.02 against
//! 4.32–4.58, 3.28–3.34×); one thread 12.05–12.17 s against 12.84–13.17. The same 598 steps and
//! states (with `friction` too, 628 steps). The calm drape of `collision_cost -- 10`, with
//! self-collision and the sphere, two runs of each: 21.2–21.8 ms per step at 10,000 vertices
//! against 23.1–23.2, 0.372–0.380 s at 100,489 against 0.376–0.378.
//!
//! With the add-on's frictions (`48 ratio 40 adaptive friction`), the friction between layers
//! found its faces from the step's candidates only where they held with room for its reach
//! (1.1 distances): in 306 of the 628 steps; the others refit the triangles' tree and queried
//! it (0.62 s of the run's friction, timers). With friction on, the candidates' vertex queries
//! now reach 1.1 distances themselves, so the faces come from them wherever they hold: in
//! every step here, 0.35 s. Three runs of each in turn against commit 9874ba0 (the three
//! changes of that day together): 14.58–15.46 ms per step against 4.51–4.84 with the sphere
//! alone, **3.19–3.23×** (before: 16.29–17.24 against 4.55–4.69, 3.58–3.68×). The same 628
//! steps and states.
//!
//! With the candidates' two filters before the narrow phase (what moved since the step's last
//! detection, then whose boxes meet) taken without a branch per candidate (`pairs::kept`, a
//! stream compaction: about half the candidates pass each filter, in no order a branch
//! predictor could follow), 2026-11-29, same VM, two rounds of each build in turn against
//! commit b738f1c: with the add-on's frictions 13.52–13.83 ms per step against 4.49–4.61 with
//! the sphere alone, **3.00–3.01×** (before: 14.60–14.86 against 4.54–4.68, 3.12–3.27×);
//! without, 11.92–12.72 against 4.16–4.58, **2.78–2.86×** (before: 2.92–2.99×). One thread,
//! with frictions: 12.96–13.37 s against 13.85–13.98. `perf` (one thread) put the filters at
//! 14 % of the run before and 7 % after. The same 628 (598) steps and states, to the bit. On
//! the 81 × 81 grid at 7.5 mm (`--side 81 --distance 0.0075`, `both` with frictions, two runs
//! of each): 98.9–99.6 ms per step against 101.7–104.7, the same 854 steps.
//!
//! Run: `cargo run --release -p cmsc-core --example crumple_cost [-- STEPS MODE CHARGE_µC
//! [adaptive [friction]] [--side N] [--distance D]]`; with `adaptive` each of the STEPS is a
//! 1/24 s frame of `System::advance` at the add-on's defaults (3–32 steps per frame, iterations
//! to 10⁻³); with `friction` the contacts have the add-on's frictions for new objects (Layer
//! Friction 5/s, Collision Friction 5), else none. `--side` makes the cloth N × N vertices over
//! the same 2 m (41), `--distance` its self-collision distance (m, 0.015).
//! Mode `ratio` runs `both` and `collider` in turn, three times each in one process, and
//! prints the time per step of each run and the ratio of the medians: the shared VM's speed
//! drifts by ±20 % between runs minutes apart, which separate processes read as a change.

use std::time::Instant;

#[path = "common/args.rs"]
mod args;
#[path = "common/crumple.rs"]
mod crumple;
use crumple::{crumple, Cloth, Contacts};

fn main() {
    let steps: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(240);
    let mode = std::env::args().nth(2).unwrap_or_else(|| "both".into());
    let charge = std::env::args().nth(3).and_then(|a| a.parse::<f64>().ok()).unwrap_or(40.0) * 1e-6;
    // `adaptive`: each of the STEPS is a 1/24 s frame of `System::advance` with the add-on's
    // defaults (3 to 32 steps, iterations to the relative update 10⁻³)
    let adaptive = std::env::args().nth(4).is_some_and(|a| a == "adaptive");
    let friction = std::env::args().nth(5).is_some_and(|a| a == "friction");
    let issues = Cloth::ISSUES;
    let cloth =
        Cloth { side: args::arg("--side", issues.side), distance: args::arg("--distance", issues.distance) };
    let contacts = |mode: &str| Contacts {
        self_collision: mode == "self" || mode == "both",
        sphere: mode == "collider" || mode == "both",
        friction,
    };
    println!("threads: {}", rayon::current_num_threads());
    if mode != "ratio" {
        let (total, taken_steps) = run(steps, cloth, charge, adaptive, contacts(&mode), true);
        println!("total {total:.2} s over {steps} steps ({taken_steps} steps of the system)");
        return;
    }
    let mut per_step: [Vec<f64>; 2] = Default::default();
    for round in 0..3 {
        for (k, mode) in ["both", "collider"].into_iter().enumerate() {
            let (total, taken_steps) = run(steps, cloth, charge, adaptive, contacts(mode), false);
            let ms = 1e3 * total / taken_steps as f64;
            println!("round {round} {mode:8}: {total:.2} s over {taken_steps} steps, {ms:.2} ms per step");
            per_step[k].push(ms);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [both, collider] = per_step.each_mut().map(median);
    println!("median: {both:.2} against {collider:.2} ms per step, {:.2}x", both / collider);
}

/// Runs the crumple of `cloth` for `steps` (frames where `adaptive`) with `contacts`, printing
/// each step's time, largest move, lowest point and closest opposite charges where `verbose`;
/// returns the time taken (s) and the system's steps.
fn run(
    steps: u32,
    cloth: Cloth,
    charge: f64,
    adaptive: bool,
    contacts: Contacts,
    verbose: bool,
) -> (f64, u32) {
    let (mut sys, _, _) = crumple(cloth, charge, if adaptive { 1e-3 } else { 0.0 }, contacts);
    let n = sys.n_vertices();
    let q = sys.charges().to_vec();
    if verbose {
        println!("n = {n}");
    }
    let (mut total, mut taken_steps) = (0.0, 0);
    for s in 0..steps {
        let before = sys.positions().to_vec();
        let t0 = Instant::now();
        let result =
            if adaptive { sys.advance(1.0 / 24.0, 3, 32).map(Some) } else { sys.step().map(|()| None) };
        let taken = match result {
            Ok(taken) => {
                taken_steps += taken.unwrap_or(1);
                taken.map(|k| format!(" ({k} steps)")).unwrap_or_default()
            }
            Err(e) => {
                println!("step {s}: {e}");
                break;
            }
        };
        let dt = t0.elapsed().as_secs_f64();
        total += dt;
        if !verbose || !(s % 20 == 0 || dt > 0.1 || s > 40) {
            continue;
        }
        let moved = sys.positions().iter().zip(&before).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
        let lowest = sys.positions().iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
        let x = sys.positions();
        let q = &q;
        let closest = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| q[i] * q[j] < 0.0 && i < j).map(move |j| (i, j)))
            .map(|(i, j)| (x[i] - x[j]).norm())
            .fold(f64::INFINITY, f64::min);
        println!("step {s:4}{taken}: {dt:.4} s, largest move {moved:.4} m, lowest z {lowest:.3}, closest +/- {closest:.2e}");
    }
    (total, taken_steps)
}
