/// libFuzzer's driver (LLVM 11 and later), which parses the command line and runs the loop.
@_silgen_name("LLVMFuzzerRunDriver")
private func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The fuzz targets' `main`. SwiftPM links an executable target's entry point under the name
/// `<Target>_main` and defines `main` as that symbol, so libFuzzer's own `main` is never linked;
/// each target exports `<Target>_main` and hands its test function to libFuzzer's driver here.
public func runFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var count = argc
    var arguments = argv
    return llvmFuzzerRunDriver(&count, &arguments, test)
}
