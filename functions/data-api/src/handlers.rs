//! One function per endpoint: parse, call one use case, answer. Shared answers (401, 422)
//! are added in `wearlab_web::openapi`.

use axum::Json;
use axum::extract::{Path, State};
use wearlab_domain::ids::UserId;
use wearlab_domain::pipeline::read::{self, Days};
use wearlab_models::DetailBody;
use wearlab_models::data::{
    ActivityResponse, BodyResponse, GroupedTimeseries, MealResponse, ProfileQuery, ProfileSummary,
    SleepCycleResponse, SleepResponse, SummaryQuery, TimeseriesQuery, WorkoutsResponse,
};
use wearlab_web::{ApiError, AppState, AuthTeam, QueryParams, path_user_id};

type Answer<T> = Result<T, ApiError>;

fn parse(s: &AppState, user_id: &str, q: &SummaryQuery) -> Result<(UserId, Days), ApiError> {
    let user = path_user_id(user_id)?;
    let days = read::parse_days(&s.deps, &q.start_date, q.end_date.as_deref())?;
    Ok((user, days))
}

/// Daily activity summaries of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_activity_summary", get, path = "/v2/summary/activity/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Daily activity summaries.", body = ActivityResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn activity(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<ActivityResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let activity = read::summaries(&s.deps, team, user, "activity", days, q.provider.as_deref()).await?;
    Ok(Json(ActivityResponse { activity }))
}

/// Sleep sessions of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_sleep_summary", get, path = "/v2/summary/sleep/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Sleep sessions.", body = SleepResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sleep(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<SleepResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let sleep = read::summaries(&s.deps, team, user, "sleep", days, q.provider.as_deref()).await?;
    Ok(Json(SleepResponse { sleep }))
}

/// Sleep cycles (hypnograms; they replace the deprecated hypnogram timeseries) of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_sleep_cycle_summary", get, path = "/v2/summary/sleep_cycle/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Sleep cycles (hypnograms; they replace the deprecated hypnogram timeseries).", body = SleepCycleResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sleep_cycle(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<SleepCycleResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let sleep_cycle =
        read::summaries(&s.deps, team, user, "sleep_cycle", days, q.provider.as_deref()).await?;
    Ok(Json(SleepCycleResponse { sleep_cycle }))
}

/// Workouts of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_workouts_summary", get, path = "/v2/summary/workouts/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Workouts.", body = WorkoutsResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn workouts(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<WorkoutsResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let workouts = read::summaries(&s.deps, team, user, "workouts", days, q.provider.as_deref()).await?;
    Ok(Json(WorkoutsResponse { workouts }))
}

/// Body measurements of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_body_summary", get, path = "/v2/summary/body/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Body measurements.", body = BodyResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn body(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<BodyResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let body = read::summaries(&s.deps, team, user, "body", days, q.provider.as_deref()).await?;
    Ok(Json(BodyResponse { body }))
}

/// Meals of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_meal_summary", get, path = "/v2/summary/meal/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Meals.", body = MealResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn meal(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<SummaryQuery>,
) -> Answer<Json<MealResponse>> {
    let (user, days) = parse(&s, &user_id, &q)?;
    let meals = read::summaries(&s.deps, team, user, "meal", days, q.provider.as_deref()).await?;
    Ok(Json(MealResponse { meals }))
}

/// The user's profile (height, birth year) from one provider.
#[utoipa::path(operation_id = "get_profile_summary", get, path = "/v2/summary/profile/{user_id}", tag = "data",
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), ProfileQuery),
    responses(
        (status = 200, description = "The profile.", body = ProfileSummary),
        (status = 404, description = "No such user in this team, or no profile data yet.", body = DetailBody),
    ))]
pub async fn profile(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<ProfileQuery>,
) -> Answer<Json<ProfileSummary>> {
    Ok(Json(read::profile(&s.deps, team, path_user_id(&user_id)?, q.provider.as_deref()).await?))
}

/// Samples of one timeseries resource (e.g. heartrate, steps, hrv, glucose, calories_active,
/// blood_oxygen, weight), grouped by provider and source, a page of days at a time.
#[utoipa::path(operation_id = "get_grouped_timeseries", get, path = "/v2/timeseries/{user_id}/{resource}/grouped", tag = "data",
    params(
        ("user_id" = uuid::Uuid, Path, description = "The user's id."),
        ("resource" = String, Path, example = "heartrate", description = "The timeseries resource."),
        TimeseriesQuery,
    ),
    responses(
        (status = 200, description = "One page of sample groups.", body = GroupedTimeseries),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn timeseries(
    State(s): State<AppState>,
    AuthTeam(team): AuthTeam,
    Path((user_id, resource)): Path<(String, String)>,
    QueryParams(q): QueryParams<TimeseriesQuery>,
) -> Answer<Json<GroupedTimeseries>> {
    let user = path_user_id(&user_id)?;
    let days = read::parse_days(&s.deps, &q.start_date, q.end_date.as_deref())?;
    Ok(Json(read::timeseries(&s.deps, team, user, &resource, days, q.next_cursor.as_deref()).await?))
}
