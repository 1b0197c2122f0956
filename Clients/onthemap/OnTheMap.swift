import ArgumentParser

@main
struct OnTheMap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onthemap",
        abstract: "Drop a pin on the map and see where everyone else is, from the command line.",
        discussion: """
            The gateway is --gateway URL, else $ONTHEMAP_GATEWAY, else http://127.0.0.1:8080. Sessions are kept in \
            $XDG_CONFIG_HOME/onthemap/ (default ~/.config/onthemap/), one per gateway, readable by you alone.

            A gateway holds class maps besides its own: --map SLUG, or a map chosen with maps use, points the pins' \
            commands at one (see onthemap maps --help).

            Exit codes:
            \(ExitStatus.table)
            """,
        version: "1.0",
        subcommands: [
            SignUpCommand.self, LogInCommand.self, LogOutCommand.self, WhoAmICommand.self, ListCommand.self,
            PostCommand.self, DeleteCommand.self, HistoryCommand.self, GeocodeCommand.self, WatchCommand.self, OpenCommand.self,
            ForgetMeCommand.self, MapsCommand.self,
        ]
    )
}
