import Testing
@testable import WebProxyNet
