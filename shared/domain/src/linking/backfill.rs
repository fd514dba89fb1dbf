//! Operator repair of the provider-push index: provider-account markers written before the index
//! existed carry no GSI1 entry, so a provider's push cannot find their connections.
//! [`backfill_push_index`] rewrites a team's markers with the entry; markers that have it are left
//! alone, so it may run any number of times.

use serde::Serialize;

use super::connections::AccountMarker;
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::keys;
use crate::ports::{Condition, Cursor, Query, StoreError};

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BackfillReport {
    /// Markers read.
    pub scanned: usize,
    /// Markers given their index entry.
    pub rewritten: usize,
    /// Markers changed or removed while the run read them (whoever wrote them set the entry).
    pub skipped: usize,
    /// Set when `max_pages` ended the run before the last marker: pass it as `after` to go on.
    pub next: Option<String>,
}

/// Gives every provider-account marker of `team` its provider-push index entry, `page_size`
/// markers a page, at most `max_pages` pages, from `after` (a previous report's `next`). Each
/// marker is rewritten only if it is unchanged since read, so a connection removed meanwhile is
/// not brought back.
pub async fn backfill_push_index(
    deps: &Deps,
    team: TeamId,
    after: Option<&str>,
    page_size: u32,
    max_pages: usize,
) -> Result<BackfillReport, DomainError> {
    let mut report = BackfillReport::default();
    let mut cursor = after.map(Cursor::decode).transpose()?;
    for _ in 0..max_pages {
        let query = Query::partition(keys::team(team).pk)
            .prefix(keys::linking::PROVIDER_ACCOUNT_MARKERS)
            .limit(page_size.max(1))
            .after(cursor.take());
        let page = deps.table.query(query).await?;
        for item in page.items {
            report.scanned += 1;
            if item.gsi1.is_some() {
                continue;
            }
            let Some((provider, external)) = keys::linking::parse_provider_account(&item.key.sk) else {
                tracing::warn!(team_id = %team, "provider-account marker with an unreadable key left alone");
                continue;
            };
            let marker: AccountMarker = item.decode()?;
            let version = item.version;
            let mut next = item.with_gsi1(
                keys::linking::provider_user_index(&provider, &external),
                keys::linking::provider_user_index_sort(team, marker.user_id),
            );
            next.version = version + 1;
            match deps.table.put(next, Condition::VersionIs(version)).await {
                Ok(()) => report.rewritten += 1,
                Err(StoreError::ConditionFailed { .. }) => report.skipped += 1,
                Err(e) => return Err(e.into()),
            }
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    report.next = cursor.map(|c| c.encode());
    tracing::info!(
        team_id = %team,
        scanned = report.scanned,
        rewritten = report.rewritten,
        skipped = report.skipped,
        done = report.next.is_none(),
        "provider-push index backfilled"
    );
    Ok(report)
}
