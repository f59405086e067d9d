; Inno Setup script of the Loadout installer for Windows (x64).
;
;   iscc /DAppVersion=0.1.0 /DSourceDir=..\..\dist\loadout /O..\..\dist packaging\windows\loadout.iss
;
; packaging/build.py runs this after PyInstaller. SourceDir is the frozen bundle
; (loadout-cli.exe for the command line, Loadout.exe for the window, _internal\ with Python,
; Qt, the engine builds and the demo model). Installs per user by default (no admin
; prompt); an administrator can choose "all users". Adds Start-menu entries, an optional
; desktop icon and an uninstaller (Settings > Apps); user data is kept on uninstall.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\loadout"
#endif

[Setup]
AppId={{6B8F4C1E-6E52-4C5B-9A3C-6F1D2A7E9B40}
AppName=Loadout
AppVersion={#AppVersion}
AppVerName=Loadout {#AppVersion}
AppPublisher=Loadout
AppComments=Desktop launcher for local LLMs
DefaultDirName={autopf}\Loadout
DefaultGroupName=Loadout
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputBaseFilename=Loadout-{#AppVersion}-setup
SetupIconFile=..\..\assets\installer\loadout.ico
UninstallDisplayIcon={app}\Loadout.exe
UninstallDisplayName=Loadout {#AppVersion}
LicenseFile=..\..\packaging\LICENSE.txt
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesEnvironment=no
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Loadout"; Filename: "{app}\Loadout.exe"; WorkingDir: "{app}"; Comment: "Run local LLMs"
Name: "{group}\Loadout self-test"; Filename: "{app}\loadout-cli.exe"; Parameters: "--self-test"; WorkingDir: "{app}"; Comment: "Load the demo model and answer one question"
Name: "{group}\Uninstall Loadout"; Filename: "{uninstallexe}"
Name: "{autodesktop}\Loadout"; Filename: "{app}\Loadout.exe"; WorkingDir: "{app}"; Tasks: desktopicon

[Run]
Filename: "{app}\Loadout.exe"; Description: "{cm:LaunchProgram,Loadout}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; The engine builds are plain Python packages: Python may write byte-code caches into
; them at first use, which the uninstaller did not install. Settings and models in the
; user's AppData folders are left alone.
Type: filesandordirs; Name: "{app}\_internal\engines"
