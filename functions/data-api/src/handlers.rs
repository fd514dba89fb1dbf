//! One function per endpoint: parse, call one use case, answer. Shared answers (401, 422)
//! are added in `wearlab_web::openapi`.

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use wearlab_domain::common::ids::{TeamId, UserId};
use wearlab_domain::pipeline::read::{self, Days};
use wearlab_models::data::{
    ActivityResponse, BodyResponse, GroupedTimeseries, MealResponse, ProfileQuery, ProfileSummary,
    SleepCycleResponse, SleepResponse, SummaryQuery, TimeseriesQuery, WorkoutsResponse,
};
use wearlab_models::data_phone::{ElectrocardiogramResponse, MenstrualCycleResponse};
use wearlab_models::{DetailBody, Resource};
use wearlab_web::{ApiError, AppState, AuthCaller, Inputs, QueryParams};

type Answer<T> = Result<T, ApiError>;

/// A summary read as every `/v2/summary/{resource}/{user_id}` route takes it: the team of the key
/// or the user's token (401 first), the user of the path (a user's token: its own only), the days of the query and its provider filter.
pub struct SummaryCall {
    team: TeamId,
    user: UserId,
    days: Days,
    provider: Option<String>,
}

impl FromRequestParts<AppState> for SummaryCall {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let caller = AuthCaller::from_request_parts(parts, s).await?;
        // The routes have the one parameter; a path that does not give it is not a user id.
        let raw = Path::<String>::from_request_parts(parts, s).await.map(|p| p.0).unwrap_or_default();
        let QueryParams(q) = QueryParams::<SummaryQuery>::from_request_parts(parts, s).await?;
        let user = caller.user_in_path(&raw)?;
        let days =
            read::parse_days(&s.deps, &q.start_date, q.end_date.as_deref()).map_err(|e| READ.locate(e))?;
        Ok(Self { team: caller.team, user, days, provider: q.provider })
    }
}

impl SummaryCall {
    /// The user's `resource` summaries of those days.
    async fn read<T: DeserializeOwned>(self, s: &AppState, resource: Resource) -> Answer<Vec<T>> {
        read::summaries(&s.deps, self.team, self.user, &resource, self.days, self.provider.as_deref())
            .await
            .map_err(|e| READ.locate(e))
    }
}

/// Daily activity summaries of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_activity_summary", get, path = "/v2/summary/activity/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Daily activity summaries.", body = ActivityResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn activity(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<ActivityResponse>> {
    Ok(Json(ActivityResponse { activity: call.read(&s, Resource::Activity).await? }))
}

/// Sleep sessions of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_sleep_summary", get, path = "/v2/summary/sleep/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Sleep sessions.", body = SleepResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sleep(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<SleepResponse>> {
    Ok(Json(SleepResponse { sleep: call.read(&s, Resource::Sleep).await? }))
}

/// Sleep cycles (hypnograms; they replace the deprecated hypnogram timeseries) of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_sleep_cycle_summary", get, path = "/v2/summary/sleep_cycle/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Sleep cycles (hypnograms; they replace the deprecated hypnogram timeseries).", body = SleepCycleResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn sleep_cycle(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<SleepCycleResponse>> {
    Ok(Json(SleepCycleResponse { sleep_cycle: call.read(&s, Resource::SleepCycle).await? }))
}

/// Workouts of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_workouts_summary", get, path = "/v2/summary/workouts/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Workouts.", body = WorkoutsResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn workouts(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<WorkoutsResponse>> {
    Ok(Json(WorkoutsResponse { workouts: call.read(&s, Resource::Workouts).await? }))
}

/// Body measurements of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_body_summary", get, path = "/v2/summary/body/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Body measurements.", body = BodyResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn body(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<BodyResponse>> {
    Ok(Json(BodyResponse { body: call.read(&s, Resource::Body).await? }))
}

/// Meals of the user from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_meal_summary", get, path = "/v2/summary/meal/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Meals.", body = MealResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn meal(State(s): State<AppState>, call: SummaryCall) -> Answer<Json<MealResponse>> {
    Ok(Json(MealResponse { meals: call.read(&s, Resource::Meal).await? }))
}

/// Menstrual cycles the user's phone recorded (Apple Health, Health Connect), by the day their
/// period started, from `start_date` to `end_date` (inclusive), oldest first.
#[utoipa::path(operation_id = "get_menstrual_cycle_summary", get, path = "/v2/summary/menstrual_cycle/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Menstrual cycles.", body = MenstrualCycleResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn menstrual_cycle(
    State(s): State<AppState>,
    call: SummaryCall,
) -> Answer<Json<MenstrualCycleResponse>> {
    Ok(Json(MenstrualCycleResponse { menstrual_cycle: call.read(&s, Resource::MenstrualCycle).await? }))
}

/// Electrocardiogram recordings (Apple Watch) of the user from `start_date` to `end_date`
/// (inclusive), oldest first; their voltage samples are the `electrocardiogram_voltage`
/// timeseries.
#[utoipa::path(operation_id = "get_electrocardiogram_summary", get, path = "/v2/summary/electrocardiogram/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), SummaryQuery),
    responses(
        (status = 200, description = "Electrocardiogram recordings.", body = ElectrocardiogramResponse),
        (status = 404, description = "No such user in this team.", body = DetailBody),
    ))]
pub async fn electrocardiogram(
    State(s): State<AppState>,
    call: SummaryCall,
) -> Answer<Json<ElectrocardiogramResponse>> {
    Ok(Json(ElectrocardiogramResponse {
        electrocardiogram: call.read(&s, Resource::Electrocardiogram).await?,
    }))
}

/// The user's profile (height, birth year) from one provider.
#[utoipa::path(operation_id = "get_profile_summary", get, path = "/v2/summary/profile/{user_id}", tag = "data", security(("api_key" = []), ("user_token" = [])),
    params(("user_id" = uuid::Uuid, Path, description = "The user's id."), ProfileQuery),
    responses(
        (status = 200, description = "The profile.", body = ProfileSummary),
        (status = 404, description = "No such user in this team, or no profile data yet.", body = DetailBody),
    ))]
pub async fn profile(
    State(s): State<AppState>,
    caller: AuthCaller,
    Path(user_id): Path<String>,
    QueryParams(q): QueryParams<ProfileQuery>,
) -> Answer<Json<ProfileSummary>> {
    Ok(Json(
        read::profile(&s.deps, caller.team, caller.user_in_path(&user_id)?, q.provider.as_deref()).await?,
    ))
}

/// Samples of one timeseries resource (e.g. heartrate, steps, hrv, glucose, calories_active,
/// blood_oxygen, weight), grouped by provider and source, a page of days at a time.
#[utoipa::path(operation_id = "get_grouped_timeseries", get, path = "/v2/timeseries/{user_id}/{resource}/grouped", tag = "data", security(("api_key" = []), ("user_token" = [])),
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
    caller: AuthCaller,
    // The resource is read by its wire name here; one that is not a timeseries is refused by
    // the read (422, `resource`).
    Path((user_id, resource)): Path<(String, Resource)>,
    QueryParams(q): QueryParams<TimeseriesQuery>,
) -> Answer<Json<GroupedTimeseries>> {
    let user = caller.user_in_path(&user_id)?;
    let days = read::parse_days(&s.deps, &q.start_date, q.end_date.as_deref()).map_err(|e| READ.locate(e))?;
    Ok(Json(
        read::timeseries(&s.deps, caller.team, user, &resource, days, q.next_cursor.as_deref())
            .await
            .map_err(|e| READ.locate(e))?,
    ))
}

/// Where a data read's inputs are (the use case names fields; the answer says where).
const READ: Inputs =
    Inputs { query: &["start_date", "end_date", "provider", "next_cursor"], path: &["user_id", "resource"] };
