// TillGatewayKit: what gateway modules share. See the files beside this one.
@_exported import Till
