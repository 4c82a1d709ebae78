// The server half re-exports the app half: a merchant server imports `TillEcommpayServer` only.
@_exported import TillEcommpay
