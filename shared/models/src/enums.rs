//! Non-exhaustive enums: documented values are variants, anything else is kept as `Other` and
//! written back unchanged, so a value added by a newer server never breaks an older reader.

/// Declares a string enum that keeps unknown values.
#[macro_export]
macro_rules! open_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)+
            /// A value this version does not know; kept verbatim.
            Other(String),
        }

        impl $name {
            /// Every documented value, in documentation order.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)+
                    Self::Other(s) => s,
                }
            }

            /// The documented variant for `s`, or `None` for anything else.
            pub fn known(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::known(s).unwrap_or_else(|| Self::Other(s.to_owned()))
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;

            /// Never fails: a value this version does not know is kept as `Other`.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok(Self::from(s))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::__utoipa::PartialSchema for $name {
            fn schema() -> $crate::__utoipa::openapi::RefOr<$crate::__utoipa::openapi::schema::Schema> {
                use $crate::__utoipa::openapi::schema::{ObjectBuilder, Type};
                // Documented as a string, not a closed `enum`: newer servers may send new values.
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some(format!(
                        "Non-exhaustive: tolerate values not listed here. Known values: {}.",
                        Self::KNOWN.join(", ")
                    )))
                    .examples(Self::KNOWN.iter().take(1).map(|v| serde_json::Value::from(*v)))
                    .into()
            }
        }

        impl $crate::__utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($name))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Ok(Self::from(s.as_ref()))
            }
        }
    };
}

open_enum!(
    /// How a provider is connected.
    AuthType {
        Oauth => "oauth",
        TeamOauth => "team_oauth",
        Sdk => "sdk",
        Password => "password",
        Email => "email",
        App => "app",
    }
);

open_enum!(
    /// State of a password link attempt.
    LinkState {
        Success => "success",
        Error => "error",
        PendingProviderMfa => "pending_provider_mfa",
    }
);

open_enum!(
    /// Why a link attempt failed.
    LinkErrorType {
        InvalidToken => "invalid_token",
        TokenExpired => "token_expired",
        TokenNotValidated => "token_not_validated",
        TokenConsumed => "token_consumed",
        ProviderCredentialError => "provider_credential_error",
        ProviderPasswordExpired => "provider_password_expired",
        ProviderApiError => "provider_api_error",
        UnsupportedRegion => "unsupported_region",
        DuplicateConnection => "duplicate_connection",
        RequiredScopesNotGranted => "required_scopes_not_granted",
        IncorrectMfaCode => "incorrect_mfa_code",
        UserCancelled => "user_cancelled",
    }
);

open_enum!(
    /// Context of a portal link.
    PortalContext {
        Launch => "launch",
        Communications => "communications",
    }
);

open_enum!(
    Race {
        AfricanAmericanOrBlack => "african_american_or_black",
        Asian => "asian",
        IndigenousNativeAmericanAlaskaNative => "indigenous_native_american_alaska_native",
        Other_ => "other",
        PacificIslanderOrHawaiian => "pacific_islander_or_hawaiian",
        WhiteCaucasian => "white_caucasian",
    }
);

open_enum!(
    Ethnicity {
        Hispanic => "hispanic",
        NonHispanic => "non_hispanic",
        AshkenaziJewish => "ashkenazi_jewish",
        Other_ => "other",
    }
);

open_enum!(
    SexualOrientation {
        LesbianGayOrHomosexual => "lesbian_gay_or_homosexual",
        HeterosexualOrStraight => "heterosexual_or_straight",
        Bisexual => "bisexual",
        DontKnow => "dont_know",
        Other_ => "other",
    }
);

open_enum!(
    GenderIdentity {
        Male => "male",
        Female => "female",
        FemaleToMaleFtmTransgenderMaleTransMan => "female_to_male_ftm_transgender_male_trans_man",
        MaleToFemaleMtfTransgenderFemaleTransWoman => "male_to_female_mtf_transgender_female_trans_woman",
        Genderqueer => "genderqueer",
        Other_ => "other",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_round_trip() {
        let v: LinkState = serde_json::from_str("\"pending_provider_mfa\"").unwrap();
        assert_eq!(v, LinkState::PendingProviderMfa);
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"pending_provider_mfa\"");
    }

    #[test]
    fn unknown_values_are_kept_verbatim() {
        let v: AuthType = serde_json::from_str("\"carrier_pigeon\"").unwrap();
        assert_eq!(v, AuthType::Other("carrier_pigeon".into()));
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"carrier_pigeon\"");
    }

    #[test]
    fn documented_other_is_a_known_value() {
        let v: Race = serde_json::from_str("\"other\"").unwrap();
        assert_eq!(v, Race::Other_);
        assert_eq!(v.as_str(), "other");
    }
}
