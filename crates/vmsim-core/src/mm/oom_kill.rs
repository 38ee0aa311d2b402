//! The OOM killer.
//!
//! Models mm/oom_kill.c: out_of_memory() → select_bad_process() with
//! oom_badness() (resident pages + page tables, oom_score_adj 0 for all), the
//! first task with the highest score in process order wins, kernel threads
//! are never chosen; oom_kill_process() kills it and the oom_reaper frees its
//! memory (here at once, at the cost `cost.oom_kill`).

use super::vmstat::Event;
use crate::engine::TaskId;
use crate::kernel::Kernel;

impl Kernel {
    /// The task with the highest oom_badness, first in process order on ties (select_bad_process).
    pub fn select_bad_process(&self) -> Option<TaskId> {
        let mut chosen = None;
        let mut chosen_points = 0u64;
        for (i, t) in self.tasks.iter().enumerate() {
            if !t.alive || t.kthread || t.oom_killed {
                continue;
            }
            if t.swapoff_type.is_some() {
                // oom_evaluate_task(): a task running swapoff is chosen first.
                return Some(i as TaskId);
            }
            let points = self.task_footprint(i as TaskId);
            if chosen.is_none() || points > chosen_points {
                chosen = Some(i as TaskId);
                chosen_points = points;
            }
        }
        chosen
    }

    /// Kills the worst task and frees its memory (out_of_memory); Some(victim) on a kill.
    pub fn out_of_memory(&mut self, now: u64) -> Option<TaskId> {
        self.mm.cur.acc += self.mm.cost.oom_kill;
        let Some(victim) = self.select_bad_process() else {
            self.oom_no_victim += 1;
            return None;
        };
        self.mm.count_vm_events(Event::OOM_KILL, 1);
        self.tasks[victim as usize].oom_killed = true;
        self.exit_task(victim, now);
        self.mm.cur.kill.push(victim);
        Some(victim)
    }
}
