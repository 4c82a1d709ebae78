// The server half re-exports the app half: a merchant server imports `TillIPayNowServer` only.
@_exported import TillIPayNow
