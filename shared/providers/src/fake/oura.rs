//! The local fake of oura's API.
