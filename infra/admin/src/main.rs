//! `wearlab-admin`: teams and API keys for operators.
//!
//! Local data directory by default (`WEARLAB_DATA_DIR`, `.local/`); `--aws` works on the table
//! named by `WEARLAB_TABLE_NAME` with the usual AWS credentials and `AWS_ENDPOINT_URL`.
//! `dlq list|redrive <queue>` inspects and redrives the dead-letter queues (SQS with `--aws`).
//! `providers backfill-push-index --team <id>` repairs the provider-push index of old markers.
//! Run it while the local stack is stopped: the local table file has one writer at a time.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use wearlab_domain::common::ids::TeamId;
use wearlab_domain::ports::QueueName;
use wearlab_domain::ports::{Clock, SystemClock};
use wearlab_domain::{Deps, common::dead_letters, common::fair_use, linking, teams};

#[derive(Parser)]
#[command(name = "wearlab-admin", about = "Teams, their API keys and features, of a Wearlab installation")]
struct Cli {
    /// Work on the AWS table (WEARLAB_TABLE_NAME) instead of the local data directory.
    #[arg(long, global = true)]
    aws: bool,
    /// Local data directory.
    #[arg(long, global = true, env = "WEARLAB_DATA_DIR", default_value = ".local")]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Teams.
    Team {
        #[command(subcommand)]
        command: TeamCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Dead-letter queues of the pull, bulk and webhook queues (SQS with --aws: the queue URLs
    /// from WEARLAB_<QUEUE>_QUEUE_URL, the dead-letter queue from its redrive policy).
    Dlq {
        #[command(subcommand)]
        command: DlqCommand,
    },
    /// Provider connections.
    Providers {
        #[command(subcommand)]
        command: ProvidersCommand,
    },
}

#[derive(Subcommand)]
enum ProvidersCommand {
    /// Gives a team's provider-account markers written before the provider-push index existed
    /// their index entry, so that pushes find those connections. Idempotent; prints the counts
    /// and, when --max-pages stopped it early, `next` to pass as --after.
    BackfillPushIndex {
        #[arg(long)]
        team: String,
        /// `next` of a previous run.
        #[arg(long)]
        after: Option<String>,
        #[arg(long, default_value_t = 100)]
        page_size: u32,
        #[arg(long, default_value_t = 100)]
        max_pages: usize,
    },
}

#[derive(Subcommand)]
enum DlqCommand {
    /// Prints the count and up to --max messages: id, receive count, age, kind and ids only.
    List {
        /// pull, bulk or webhook.
        queue: String,
        #[arg(long, default_value_t = 10)]
        max: usize,
    },
    /// Moves up to --max messages back to the source queue and prints how many moved.
    Redrive {
        /// pull, bulk or webhook.
        queue: String,
        #[arg(long, default_value_t = 1000)]
        max: usize,
    },
}

#[derive(Subcommand)]
enum TeamCommand {
    /// Creates a team and prints its id.
    Create { name: String },
    /// Prints a team and its features.
    Show { team_id: String },
    /// Switches the bulk connection operations (`/v2/link/bulk_*`) on for a team.
    EnableBulk { team_id: String },
    /// Switches them off again (the endpoints answer 403; operations in flight finish).
    DisableBulk { team_id: String },
    /// Sets the team's API request limit per minute (fair use), or `default` to go back to the
    /// deployment's (WEARLAB_TEAM_RATE_LIMIT). Every instance applies it within a minute.
    RateLimit {
        team_id: String,
        /// Requests per minute (1 to 1000000000), or `default`.
        requests_per_minute: String,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Issues a new key; it is printed once and never stored.
    Issue {
        #[arg(long)]
        team: String,
        /// Environment tag inside the key: sk_<environment>_...
        #[arg(long, default_value = "prod")]
        environment: String,
    },
    /// Lists a team's keys (ids and prefixes only).
    List {
        #[arg(long)]
        team: String,
    },
    /// Revokes a key by its id.
    Revoke {
        #[arg(long)]
        team: String,
        #[arg(long)]
        key_id: String,
    },
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli).await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn team_id(raw: &str) -> Result<TeamId, String> {
    TeamId::parse(raw).ok_or_else(|| format!("not a team id: {raw}"))
}

async fn deps(cli: &Cli) -> Result<Deps, String> {
    if cli.aws {
        return wearlab_aws::deps_from_env(|var| wearlab_providers::from_vars(wearlab_sim::providers(), var))
            .await
            .map(|(deps, _settings)| deps)
            .map_err(|e| e.to_string());
    }
    let table: Arc<dyn wearlab_domain::ports::Table> = Arc::new(
        wearlab_embedded::RedbTable::open(&cli.data_dir.join("wearlab.redb")).map_err(|e| e.to_string())?,
    );
    let scheduler = Arc::new(wearlab_embedded::TableScheduler::new(table.clone()));
    Ok(Deps {
        table,
        scheduler,
        clock: Arc::new(SystemClock),
        bus: Arc::new(wearlab_embedded::MemoryBus::new()),
        providers: Arc::new(wearlab_sim::SimProviders::new(Arc::new(SystemClock))),
        // The admin commands never open sealed secrets.
        data_key: Arc::new(wearlab_domain::common::crypto::DataKey::ephemeral()),
    })
}

fn to_json(v: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(v).expect("reports serialize")
}

fn queue(raw: &str) -> Result<QueueName, String> {
    dead_letters::queue_named(raw).ok_or_else(|| format!("not a queue: {raw} (pull, bulk or webhook)"))
}

async fn dlq(cli: &Cli, command: &DlqCommand) -> Result<serde_json::Value, String> {
    let (name, is_list, max) = match command {
        DlqCommand::List { queue: q, max } => (queue(q)?, true, *max),
        DlqCommand::Redrive { queue: q, max } => (queue(q)?, false, *max),
    };
    if cli.aws {
        let dlq = wearlab_aws::sqs_dead_letters_from_env(name).await?;
        return if is_list {
            dlq.list(max, SystemClock.now()).await.map(|l| to_json(&l)).map_err(|e| e.to_string())
        } else {
            dlq.redrive(max as u64).await.map(|r| to_json(&r)).map_err(|e| e.to_string())
        };
    }
    let table: Arc<dyn wearlab_domain::ports::Table> = Arc::new(
        wearlab_embedded::RedbTable::open(&cli.data_dir.join("wearlab.redb")).map_err(|e| e.to_string())?,
    );
    let queue = wearlab_embedded::TableQueue::new(table, Arc::new(SystemClock));
    if is_list {
        queue.list_dead_letters(name, max).await.map(|l| to_json(&l)).map_err(|e| e.to_string())
    } else {
        queue.redrive_dead_letters(name, max).await.map(|r| to_json(&r)).map_err(|e| e.to_string())
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    if let Command::Dlq { command } = &cli.command {
        let out = dlq(&cli, command).await?;
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let deps = deps(&cli).await?;
    let out = match &cli.command {
        Command::Team { command: TeamCommand::Create { name } } => {
            let t = teams::create_team(&deps, name).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "team_id": t.team_id, "name": t.name, "created_on": t.created_on })
        }
        Command::Team { command: TeamCommand::Show { team_id: id } } => {
            let t = teams::get_team(&deps, team_id(id)?)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("team not found")?;
            let features = teams::features(&deps, t.team_id).await.map_err(|e| e.to_string())?;
            let limit = fair_use::team_limit(&deps, t.team_id).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "team_id": t.team_id, "name": t.name, "created_on": t.created_on,
                                "features": features,
                                "requests_per_minute": limit.map_or("default".into(), |n| n.to_string()) })
        }
        Command::Team { command: TeamCommand::EnableBulk { team_id: id } } => {
            let f = teams::set_bulk_operations(&deps, team_id(id)?, true).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "team_id": id, "features": f })
        }
        Command::Team { command: TeamCommand::DisableBulk { team_id: id } } => {
            let f =
                teams::set_bulk_operations(&deps, team_id(id)?, false).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "team_id": id, "features": f })
        }
        Command::Team { command: TeamCommand::RateLimit { team_id: id, requests_per_minute } } => {
            let limit = match requests_per_minute.as_str() {
                "default" => None,
                n => Some(n.parse::<u32>().map_err(|_| "requests_per_minute: a whole number or `default`")?),
            };
            let team = team_id(id)?;
            fair_use::set_team_limit(&deps, team, limit).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "team_id": id, "requests_per_minute": limit.map_or("default".into(), |n| n.to_string()) })
        }
        Command::Key { command: KeyCommand::Issue { team, environment } } => {
            let k = teams::issue_key(&deps, team_id(team)?, environment).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "key_id": k.key_id, "team_id": k.team_id, "api_key": k.secret,
                                "note": "shown once; only its hash is stored" })
        }
        Command::Key { command: KeyCommand::List { team } } => {
            let keys = teams::list_keys(&deps, team_id(team)?).await.map_err(|e| e.to_string())?;
            serde_json::Value::Array(
                keys.into_iter()
                    .map(|k| serde_json::json!({ "key_id": k.key_id, "prefix": k.prefix, "created_on": k.created_on }))
                    .collect(),
            )
        }
        Command::Key { command: KeyCommand::Revoke { team, key_id } } => {
            teams::revoke_key(&deps, team_id(team)?, key_id).await.map_err(|e| e.to_string())?;
            serde_json::json!({ "revoked": key_id })
        }
        Command::Providers {
            command: ProvidersCommand::BackfillPushIndex { team, after, page_size, max_pages },
        } => {
            let report = linking::backfill::backfill_push_index(
                &deps,
                team_id(team)?,
                after.as_deref(),
                *page_size,
                *max_pages,
            )
            .await
            .map_err(|e| e.to_string())?;
            to_json(&report)
        }
        Command::Dlq { .. } => unreachable!("handled above"),
    };
    println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
    Ok(())
}
