//! `Scheduler` for one process: jobs are items of the table (so they survive a restart) and
//! the local stack's timer loop runs the due ones.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use wearlab_domain::ports::{
    Condition, Item, Key, Query, Schedule, Scheduler, SchedulerError, Table, query_all,
};

const PARTITION: &str = "SCHEDULE";

#[derive(Clone)]
pub struct TableScheduler {
    table: Arc<dyn Table>,
}

impl TableScheduler {
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self { table }
    }

    /// Jobs due at `now`, soonest first.
    pub async fn due(&self, now: DateTime<Utc>) -> Result<Vec<Schedule>, SchedulerError> {
        let mut due: Vec<Schedule> = query_all(self.table.as_ref(), Query::partition(PARTITION), 100_000)
            .await
            .map_err(unavailable)?
            .iter()
            .filter_map(|i| i.decode::<Schedule>().ok())
            .filter(|s| s.at <= now)
            .collect();
        due.sort_by_key(|s| s.at);
        Ok(due)
    }

    /// Every pending job (for tests and debugging).
    pub async fn pending(&self) -> Result<Vec<Schedule>, SchedulerError> {
        self.due(DateTime::<Utc>::MAX_UTC).await
    }
}

fn unavailable(e: impl std::fmt::Display) -> SchedulerError {
    SchedulerError::Unavailable(e.to_string())
}

#[async_trait]
impl Scheduler for TableScheduler {
    async fn schedule_once(&self, schedule: Schedule) -> Result<(), SchedulerError> {
        let body = serde_json::to_value(&schedule).map_err(unavailable)?;
        let item = Item::new(Key::new(PARTITION, schedule.name.clone()), body);
        self.table.put(item, Condition::None).await.map_err(unavailable)
    }

    async fn cancel(&self, name: &str) -> Result<(), SchedulerError> {
        self.table.delete(&Key::new(PARTITION, name), Condition::None).await.map_err(unavailable)
    }
}
