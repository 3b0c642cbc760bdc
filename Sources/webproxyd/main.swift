#if canImport(Glibc)
import Glibc
#endif
import WebProxyDaemon

exit(CommandLineTool.run(arguments: Array(CommandLine.arguments.dropFirst())))
