//! `wearlab-admin`: teams and API keys for operators.
//!
//! Local data directory by default (`WEARLAB_DATA_DIR`, `.local/`); `--aws` works on the table
//! named by `WEARLAB_TABLE_NAME` with the usual AWS credentials and `AWS_ENDPOINT_URL`.
//! Run it while the local stack is stopped: the local table file has one writer at a time.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use wearlab_domain::ids::TeamId;
use wearlab_domain::ports::SystemClock;
use wearlab_domain::{Deps, teams};

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
        return wearlab_aws::deps_from_env(wearlab_sim::providers()).await.map_err(|e| e.to_string());
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
        data_key: Arc::new(wearlab_domain::crypto::DataKey::ephemeral()),
    })
}

async fn run(cli: Cli) -> Result<(), String> {
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
            serde_json::json!({ "team_id": t.team_id, "name": t.name, "created_on": t.created_on,
                                "features": features })
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
    };
    println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
    Ok(())
}
