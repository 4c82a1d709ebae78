// The server half re-exports the app half, so the merchant server imports one module.
@_exported import TillWorldline
