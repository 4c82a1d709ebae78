// The server half builds on the app half's types (environment, parameters, signature, field rules),
// so the merchant server imports this one module for both.
@_exported import TillPayFort
